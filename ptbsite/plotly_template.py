"""plotly's ``plotly_white`` template, as every figure the site sends carries it in ``layout.template``, read from a
static JSON file so that web workers never import plotly (issue 24: plotly's graph_objs and validators held ~25-30 MB
of every web process, bench/RESULTS.md).

``plotly_white.json`` beside this module is ``json.loads(go.Figure(layout={"template": "plotly_white"}).to_json())
["layout"]["template"]`` (:func:`from_plotly`), written by plotly 6.9.0. Regenerate it after upgrading plotly with

    .venv/bin/python -m ptbsite.plotly_template

``tests/test_figure_dicts.py`` checks that the file equals what the installed plotly writes, and that every figure
built from it equals the one plotly builds.
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

TEMPLATE_FILE = Path(__file__).with_name("plotly_white.json")


@cache
def _text() -> str:
    return TEMPLATE_FILE.read_text(encoding="utf-8")


def plotly_white() -> dict:
    """The ``plotly_white`` template (a dict of ``data`` and ``layout`` defaults, ~7 KB of JSON), a fresh copy per
    call, so that a figure's template can be changed without touching another's."""
    return json.loads(_text())


def from_plotly() -> dict:
    """The template as the installed plotly writes it into a figure's JSON (imports plotly: for regenerating
    ``plotly_white.json`` and for the tests, never for a page)."""
    import plotly.graph_objects as go

    return json.loads(go.Figure(layout={"template": "plotly_white"}).to_json())["layout"]["template"]


def write() -> Path:
    """Write :func:`from_plotly` to ``TEMPLATE_FILE`` (sorted keys, one line); returns the file's path."""
    TEMPLATE_FILE.write_text(json.dumps(from_plotly(), sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return TEMPLATE_FILE


if __name__ == "__main__":
    print(write())
