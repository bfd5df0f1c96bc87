"""The JSON API: one NinjaAPI that mounts each app's router. OpenAPI docs at /api/docs."""
from __future__ import annotations

from ninja import NinjaAPI

from evaluator.api import router as evaluator_router
from evaluator.api import worker_router
from leaderboard.api import router as leaderboard_router
from traces.api import router as traces_router

from .unavailable import add_api_handlers

api = NinjaAPI(
    title="PostTrainBench Explorer API",
    version="1",
    description="Leaderboard, runs, traces and verdicts of post-training benchmark suites. "
    "Every HTML page of the site has a JSON twin here with the same query behind it.",
)
api.add_router("/", leaderboard_router)
api.add_router("/", traces_router)
api.add_router("/", evaluator_router)
api.add_router("/worker", worker_router)
add_api_handlers(api)
