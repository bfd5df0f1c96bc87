"""The JSON API: one NinjaAPI that mounts each app's router. OpenAPI docs at /api/docs.

The contract the OpenAPI document states, and ``tests/test_api_contract.py`` checks with schemathesis:

* Times are time-zone aware: the warehouse stores naive UTC, the answers carry the zone (``...Z``), as the
  schema's ``date-time`` format requires (:class:`UTCJSONRenderer`).
* Numbers carry 15 significant digits at most: no float noise such as ``60.440000000000005`` (:func:`_rounded`).
* Error answers are documented on every operation that can give them (:meth:`ExplorerAPI.get_openapi_schema`),
  all with the body ``{"detail": <message or list of validation errors>}``: 422 (a parameter or body failed
  validation) on every operation that takes any, 404 (no such run, job, suite or base model) on those that
  look one up, 403 (staff or worker credentials missing) on the staff and worker endpoints, 503 (the warehouse
  or the job queue is unavailable; ``Retry-After`` says when to try again) on every operation, and the
  evaluator's own 400 / 409 / 502 where its views raise them.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ninja import NinjaAPI
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder

from evaluator.api import router as evaluator_router
from evaluator.api import worker_router
from evaluator.permissions import staff_auth
from leaderboard.api import router as leaderboard_router
from traces.api import router as traces_router
from traces.challenge_views import public_router as challenges_router
from traces.challenge_views import staff_router as challenges_staff_router
from traces.review import router as review_router
from traces.across_api import router as across_router

from .unavailable import RETRY_AFTER_S, add_api_handlers


class UTCJSONEncoder(NinjaJSONEncoder):
    """Ninja's encoder, with naive datetimes (the warehouse's UTC) written as UTC: ``2026-04-05T10:00:00Z``."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime) and o.tzinfo is None:
            o = o.replace(tzinfo=timezone.utc)
        return super().default(o)


# A double holds 15 significant decimal digits exactly (C's DBL_DIG): a source's 0.226536549919078 stays whole, and
# the 16th and 17th digits that arithmetic leaves (100 * 0.6044 = 60.440000000000005) go.
SIGNIFICANT_DIGITS = 15


# Values _rounded returns as they are without a call: most of an answer (ids, texts, counts, flags, nulls).
_LEAVES = frozenset({str, int, bool, type(None)})


def _rounded(value: Any) -> Any:
    """``value`` (the answer's dicts, lists and scalars) with every float rounded to SIGNIFICANT_DIGITS significant
    digits: ``60.440000000000005`` is served as ``60.44``, ``1.6749999999999994`` as ``1.675`` (issue 29).
    Texts, integers, booleans and nulls inside a dict or list are taken as they are, without a call (a run's twin
    holds ~1,000 values: the calls were ~15 % of its CPU in the static export, issue 24)."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if value == value and abs(value) != float("inf") else value
    if isinstance(value, dict):
        return {k: v if type(v) in _LEAVES else _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [v if type(v) in _LEAVES else _rounded(v) for v in value]
    return value


class UTCJSONRenderer(JSONRenderer):
    """Ninja's JSON renderer with :class:`UTCJSONEncoder`, and floats without their arithmetic noise
    (:func:`_rounded`): the API's one place where every answer's numbers pass."""

    encoder_class = UTCJSONEncoder

    def render(self, request, data: Any, *, response_status: int) -> Any:
        return super().render(request, _rounded(data), response_status=response_status)


ERROR_SCHEMA = {
    "title": "Error", "type": "object", "required": ["detail"],
    "properties": {"detail": {"title": "Detail", "anyOf": [
        {"type": "string"}, {"type": "array", "items": {"type": "object"}}]}},
}
ERROR_TEXT = {
    400: "The request is well-formed but cannot be done (the message says why).",
    403: "Staff only (a staff session with CSRF, or Authorization: Token <key>); worker endpoints: "
         "Authorization: Bearer <worker token>.",
    404: "No such run, step, job, suite or base model.",
    409: "The judge is already running on this run.",
    422: "A parameter or the body failed validation (detail lists the errors, or says which value is wrong).",
    429: "Too many requests from this address: challenges past PTB_CHALLENGE_RATE (try again after Retry-After "
         "seconds), or bad API tokens past django-axes' AXES_FAILURE_LIMIT (every token is refused until the "
         "cool-off, PTB_LOGIN_LOCKOUT_SECONDS, ends or `manage.py axes_reset`).",
    502: "The judge command failed.",
    503: "The warehouse or the job queue is unavailable; try again after Retry-After seconds.",
}
# Statuses an evaluator view raises beyond the rules below: (method, path) -> statuses.
EXTRA_STATUSES = {
    ("post", "/api/reruns"): (400,),
    ("post", "/api/runs/{run_id}/overrides"): (400,),
    ("post", "/api/runs/{run_id}/judge"): (409, 502),
    ("post", "/api/runs/{run_id}/challenges"): (429,),
    ("post", "/api/challenges/{challenge_id}/triage"): (400,),
    ("post", "/api/worker/jobs/{job_id}/finish"): (400,),
}
# Operations without a path parameter that still look something up by a query parameter.
LOOKUP_QUERY_PATHS = {"/api/leaderboard", "/api/plots/per-benchmark", "/api/plots/time-vs-score",
                      "/api/plots/time-spent", "/api/plots/budget-and-effort", "/api/plots/usage-vs-score",
                      "/api/analysis", "/api/compare"}
CREDENTIAL_TAGS = {"reruns", "reviews", "worker"}  # the staff routers (evaluator, traces.review), the worker router
STAFF_TAGS = {"reruns", "reviews"}  # the routers of staff_auth, whose API tokens are throttled (429)


class ExplorerAPI(NinjaAPI):
    """NinjaAPI whose OpenAPI document lists the error answers each operation can give (module docstring)."""

    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> Any:
        schema = super().get_openapi_schema(*args, **kwargs)
        schema.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
        for path, operations in schema["paths"].items():
            for method, operation in operations.items():
                statuses = {503}
                if operation.get("parameters") or operation.get("requestBody"):
                    statuses.add(422)
                if "{" in path or path in LOOKUP_QUERY_PATHS:
                    statuses.add(404)
                if CREDENTIAL_TAGS & set(operation.get("tags", [])):
                    statuses.add(403)
                if STAFF_TAGS & set(operation.get("tags", [])):
                    statuses.add(429)
                statuses.update(EXTRA_STATUSES.get((method, path), ()))
                responses = operation.setdefault("responses", {})
                for status in sorted(statuses):
                    answer = {"description": ERROR_TEXT[status],
                              "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
                    if status == 503:
                        answer["headers"] = {"Retry-After": {
                            "description": f"seconds to wait ({RETRY_AFTER_S})", "schema": {"type": "integer"}}}
                    if status not in responses and str(status) not in responses:
                        responses[status] = answer  # ninja keys responses by int status
        return schema


api = ExplorerAPI(
    title="PostTrainBench Explorer API",
    version="1",
    description="Leaderboard, runs, traces and verdicts of post-training benchmark suites. "
    "Every HTML page of the site has a JSON twin here with the same query behind it. Times are UTC, with the "
    "zone. Errors answer {\"detail\": ...} with the statuses each operation lists.",
    renderer=UTCJSONRenderer(),
    urls_namespace="api",  # {% url "api:<operation function>" %}
)
api.add_router("/", leaderboard_router)
api.add_router("/", traces_router)
api.add_router("/", across_router)
api.add_router("/", evaluator_router)
api.add_router("/", review_router, auth=staff_auth)  # traces' review endpoints, staff only
api.add_router("/", challenges_router)  # the public's challenges of a verdict (anonymous, rate-limited)
api.add_router("/", challenges_staff_router, auth=staff_auth)  # their triage, staff only
api.add_router("/worker", worker_router)
add_api_handlers(api)
