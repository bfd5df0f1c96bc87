"""JSON twins of the leaderboard pages (django-ninja router, mounted under /api/)."""
from __future__ import annotations

from ninja import Router, Schema
from ninja.errors import HttpError

from . import selectors

router = Router(tags=["leaderboard"])


class BenchmarkOut(Schema):
    id: str
    name: str
    weight: float


class FallbackOut(Schema):
    base_model: str
    reason: str


class RowOut(Schema):
    key: str
    rank: int | None
    agent: str
    scaffold: str | None
    reasoning_effort: str | None
    kind: str
    average: float
    std: float | None
    runs: int
    scores: dict[str, float]
    fallbacks: dict[str, list[FallbackOut]]
    source: str
    n_runs: int
    synthetic: bool
    overridden: bool
    delta: float | None
    rank_change: int | None


class LeaderboardOut(Schema):
    suite: str
    base_model: str | None
    source: str
    apply_flags: bool
    benchmarks: list[BenchmarkOut]
    rows: list[RowOut]


@router.get("/leaderboard", response=LeaderboardOut, summary="The leaderboard rows, as on /")
def leaderboard(request, base_model: str | None = None, sort: str = "rank", dir: str = "asc",
                source: str = "published", flags: str = "apply"):
    """Rows of the leaderboard for the average over base models (default) or one ``base_model`` id.

    ``source``: ``published`` (the website's aggregates), ``runs`` (computed from ingested runs), ``all``.
    ``flags``: ``apply`` (flagged runs score as their base model) or ``ignore`` (raw scores; runs rows then carry
    ``rank_change`` = rank with flags minus rank without).
    ``average``, ``std``, ``scores`` and ``delta`` are percent (0-100); ``std`` is null for single-run agents
    and baselines; ``rank`` is null for baselines; ``fallbacks`` lists, per benchmark, the base models whose
    cell holds the base model's zero-shot score, with the reason; ``n_runs`` counts the ingested runs behind a
    runs row; ``delta`` is a runs row minus the published row of the same agent.
    """
    if flags not in ("apply", "ignore"):
        raise HttpError(422, "flags must be apply or ignore")
    try:
        board = selectors.leaderboard(base_model=base_model or None, sort=sort, direction=dir, source=source,
                                      apply_flags=flags == "apply")
    except selectors.UnknownBaseModel as exc:
        raise HttpError(404, str(exc)) from None
    except ValueError as exc:
        raise HttpError(422, str(exc)) from None
    return {
        "suite": board.suite,
        "base_model": board.base_model,
        "source": board.source,
        "apply_flags": board.apply_flags,
        "benchmarks": [{"id": b.id, "name": b.name, "weight": b.weight} for b in board.benchmarks],
        "rows": [
            {
                "key": r.key, "rank": r.rank, "agent": r.agent, "scaffold": r.scaffold,
                "reasoning_effort": r.reasoning_effort, "kind": r.kind, "average": r.average, "std": r.std,
                "runs": r.runs,
                "scores": {bid: c.score for bid, c in r.cells.items()},
                "fallbacks": {
                    bid: [{"base_model": m, "reason": reason} for m, reason in c.fallbacks]
                    for bid, c in r.cells.items() if c.fallbacks
                },
                "source": r.source, "n_runs": r.n_runs, "synthetic": r.synthetic, "overridden": r.overridden,
                "delta": r.delta, "rank_change": r.rank_change,
            }
            for r in board.rows
        ],
    }
