"""Template context every page gets: where the results shown come from (the footer)."""
from __future__ import annotations

from django.http import HttpRequest

from .suites import SuiteError, load_suite, suite_ids

PUBLISHED_SOURCE = "a copy of the PostTrainBench website data (aisa-group/posttrainbench-website, 49cdae1)"


def results_source(request: HttpRequest) -> dict[str, str]:
    """``{"results_source": text}``: the source of the suite a page shows (``?suite=``, else the default suite).

    A suite with its own reported results (``reported.source``, e.g. the FrogsGame report) names that document; a
    suite from the website data names the shipped copy (data/published/NOTE.md). An unknown or unreadable suite
    id falls back to the default suite's source, as the pages themselves do.
    """
    wanted = request.GET.get("suite", "") if hasattr(request, "GET") else ""
    try:
        suite = load_suite(wanted if wanted in suite_ids() else None)
    except SuiteError:
        return {"results_source": f"Published results: {PUBLISHED_SOURCE}."}
    reported = suite.get("reported") or {}
    if reported.get("source"):
        return {"results_source": f"Reported results: {reported['source']}, as the report states them."}
    return {"results_source": f"Published results: {PUBLISHED_SOURCE}."}
