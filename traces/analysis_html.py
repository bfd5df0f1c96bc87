"""The analysis page's per-agent table rows as HTML, written in Python: the same text ``analysis.html`` rendered
with one Django template loop per row and per cell (method mix, calibration, time use), without the template
engine's per-variable cost.

At the real benchmark's size (issue 24: 63 agents at K=90 method dirs, against 7-10 in the demo) those loops were
~60 % of the page's CPU (~8 ms for 7 agents, 33-45 ms for 63); here a row costs a few string operations. Every value
from the warehouse or the URL is escaped (``html.escape``, what ``django.utils.html.escape`` and the template's
autoescape call), every URL parameter quoted as the ``urlencode`` filter quotes it (``urllib.parse.quote``, ``/``
kept), and numbers written by the template filters the loops used (``percent``, ``fixed``, ``hours_hm``;
counts, typed ``int``, and ``H:MM`` durations are digits and written as they are).
``tests/test_analysis_html.py`` compares the output with the template loops it replaced.
"""
from __future__ import annotations

from html import escape as _escape
from urllib.parse import quote

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from ptbsite.templatetags.scores import fixed

from .selectors.analysis import AgentCalibration, AgentTimeUse, MethodMix
from .templatetags.trace_format import hours_hm, percent

DASH = "–"  # what the loops wrote for a missing mean (the ``default:"–"`` filter)


def _e(value: object) -> str:
    """A value as the template's autoescape writes it: already-safe text as is, anything else ``str()`` escaped."""
    if isinstance(value, SafeString):
        return value
    return _escape(str(value))


def _runs_link(runs_url: str, agent_q: str, suite: str, middle: str = "") -> str:
    """A link's ``href="..."`` to the runs list of one agent's latest runs in the suite: ``agent_q`` the agent key
    quoted and escaped (:func:`_agent_q`), ``middle`` (already escaped ``&amp;name=value``) between the agent and
    the suite."""
    return f'href="{runs_url}?agent={agent_q}{middle}&amp;suite={suite}&amp;latest=1"'


def _agent_q(key: str) -> str:
    """An agent key as a URL parameter value in an attribute: quoted as the ``urlencode`` filter quotes, escaped."""
    return _e(quote(key))


def method_mix_rows(rows: list[MethodMix], *, runs_url: str, suite: str) -> SafeString:
    """The method mix table's body rows (``<tr>`` per agent, in order, with the whitespace the loop wrote): runs
    and per facet in ``row.counts``' order the number of runs using it, each linked to those runs.

    Args:
        runs_url: the runs list (``reverse("traces:runs")``, once by the caller).
        suite: the suite id (from the URL, checked against the known suites; escaped here all the same).
    """
    url, s = _e(runs_url), _e(suite)
    out: list[str] = []
    facets: dict[str, str] = {}  # facet key -> escaped (the same few keys in every row)
    for row in rows:
        agent_q = _agent_q(row.key)
        out.append(f'\n      <tr data-agent="{_e(row.key)}"><td>{_e(row.agent)}</td>\n        <td class="num"><a '
                   f'{_runs_link(url, agent_q, s)}>{row.runs}</a></td>\n        ')
        for m, n in row.counts.items():
            fm = facets.get(m) or facets.setdefault(m, _e(m))
            out.append(f'<td class="num" data-facet="{fm}"><a {_runs_link(url, agent_q, s, "&amp;facet=" + fm)}>'
                       f"{n}</a></td>" if n else f'<td class="num" data-facet="{fm}"><span class="muted">0</span></td>')
        out.append("</tr>\n    ")
    return mark_safe("".join(out))


def calibration_rows(rows: list[AgentCalibration], *, runs_url: str, suite: str) -> SafeString:
    """The calibration table's body rows (``<tr>`` per agent, in order): runs with both scores (linked to the
    agent's runs with a self-reported score), mean self-reported and verified scores (percent, one decimal; "–"
    for none), mean overoptimism (two decimals and "x"; "n/a" for none) and the best run's, linked to that run."""
    url, s = _e(runs_url), _e(suite)
    out: list[str] = []
    for row in rows:
        out.append(f'\n      <tr data-agent="{_e(row.key)}"><td>{_e(row.agent)}</td>\n        <td class="num"><a '
                   f'{_runs_link(url, _agent_q(row.key), s, "&amp;facet=self_score")}>{row.runs}</a></td>\n        '
                   f'<td class="num">{_e(percent(row.mean_self) or DASH)}</td><td class="num">'
                   f'{_e(percent(row.mean_verified) or DASH)}</td>\n        <td class="num ratio">')
        out.append("n/a" if row.mean_ratio is None else f"{_e(fixed(row.mean_ratio, 2))}x")
        out.append('</td>\n        <td class="num">')
        out.append(f'<a href="{_e(reverse("traces:run", args=[row.best_run]))}">{_e(fixed(row.best_ratio, 2))}x</a>'
                   if row.best_run else "n/a")
        out.append("</td></tr>\n    ")
    return mark_safe("".join(out))


def time_use_rows(rows: list[AgentTimeUse], *, runs_url: str, suite: str) -> SafeString:
    """The time use table's body rows (``<tr>`` per agent, in order): runs (linked), budget used (percent, one
    decimal, "%"; "–" for none), mean hours per phase in ``row.hours``' order as ``H:MM`` ("–" when no run of the
    agent has a timed trace), idle gaps per run (one decimal; "–" for none)."""
    url, s = _e(runs_url), _e(suite)
    out: list[str] = []
    phases: dict[str, str] = {}  # phase key -> escaped
    for row in rows:
        out.append(f'\n      <tr data-agent="{_e(row.key)}"><td>{_e(row.agent)}</td>\n        <td class="num"><a '
                   f'{_runs_link(url, _agent_q(row.key), s)}>{row.runs}</a></td>\n        <td class="num">')
        out.append(DASH if row.budget_fraction is None else f"{_e(percent(row.budget_fraction))}%")
        out.append("</td>\n        ")
        for p, h in row.hours.items():
            fp = phases.get(p) or phases.setdefault(p, _e(p))
            out.append(f'<td class="num" data-phase="{fp}">{hours_hm(h) if row.runs_traced else DASH}</td>')
        out.append(f'\n        <td class="num">{_e(fixed(row.idle_gaps, 1) or DASH)}</td></tr>\n    ')
    return mark_safe("".join(out))
