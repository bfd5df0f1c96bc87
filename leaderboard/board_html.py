"""The leaderboard table's body rows as HTML, written in Python: the same text ``_board.html`` rendered with one
Django template loop per row and per cell, without the template engine's per-variable cost.

At the real benchmark's size (issue 24: ~60 rows from runs x 7 benchmarks, ~440 cells with a link each) the loop
cost ~40 CPU ms more than at the demo's 7 rows (~1,300 variable lookups, filters and escapes per 10 rows); here a
cell costs a few string operations. Every value from the warehouse or the URL is escaped (``django.utils.html``'s
escape, as the template's autoescape) and every URL parameter quoted as the ``urlencode`` filter quotes it.
``tests/test_board_html.py`` compares the output with the template loop it replaced, view by view.
"""
from __future__ import annotations

from html import escape as _escape
from urllib.parse import quote

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from ptbsite.templatetags.scores import fixed, pct

from .schemas import Leaderboard, Row


def _e(value: object) -> str:
    """A value as the template's autoescape writes it: already-safe text as is, anything else ``str()`` escaped."""
    if isinstance(value, SafeString):
        return value
    return _escape(str(value))


def _plural(n: object) -> str:
    """Django's ``pluralize`` with its default suffix: "s" unless the value is 1."""
    try:
        return "" if float(n) == 1 else "s"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""


def rows_html(board: Leaderboard, params: dict[str, str], *, runs_url: str, compare_url: str,
              static_export: bool) -> SafeString:
    """The body rows of the leaderboard table (``<tr>`` per row of ``board.rows``, in order), with the whitespace
    the template loop wrote.

    Args:
        params: the view's state (``LeaderboardQuery.model_dump()``): ``source``, ``base_model`` and ``facet``
            decide columns and link parameters.
        runs_url, compare_url: the runs list and the compare page (``reverse``d once by the caller).
        static_export: the static copy has no compare links (``request.static_export``).
    """
    out: list[str] = []
    with_source = params["source"] != "published"
    std_text = board.cell_std_text
    std_runs, std_published = _e(std_text["runs"]), _e(std_text["published"])
    link_tail = ""
    if params["base_model"]:
        link_tail += "&amp;base_model=" + _e(quote(params["base_model"]))
    if params["facet"]:
        link_tail += "&amp;facet=" + _e(quote(params["facet"]))
    runs_href = _e(runs_url) + "?agent="
    facet_words = f" using {_e(params['facet'])}" if params["facet"] else ""
    for row in board.rows:
        out.append(_row(row, board, with_source=with_source, std_runs=std_runs, std_published=std_published,
                        runs_href=runs_href, link_tail=link_tail, compare_url=_e(compare_url),
                        facet_words=facet_words, static_export=static_export))
    return mark_safe("".join(out))


def _row(row: Row, board: Leaderboard, *, with_source: bool, std_runs: str, std_published: str, runs_href: str,
         link_tail: str, compare_url: str, facet_words: str, static_export: bool) -> str:
    """One row as the template loop wrote it (its leading newline and trailing indent included)."""
    from_runs = row.source == "runs"
    parts = [f'\n      <tr class="{_e(row.kind)} source-{_e(row.source)}" data-agent="{_e(row.key)}" '
             f'data-source="{_e(row.source)}">\n        <td>']
    parts.append(str(row.rank) if row.rank else '<span class="muted" title="reference row, unranked">–</span>')
    parts.append(f'</td>\n        <td class="agent">{_e(row.agent)}')
    if row.synthetic:
        parts.append(' <span class="badge synthetic" title="computed from generated demo runs, not real results">'
                     'synthetic</span>')
    if row.overridden:
        parts.append(' <span class="badge override" title="a reviewer overrode a verdict of a run behind this row">'
                     'overridden</span>')
    parts.append("</td>\n        ")
    if board.has_scaffolds:
        parts.append(f"<td>{_e(row.scaffold) if row.scaffold else ''}</td>")
    parts.append("\n        ")
    if board.has_efforts:
        parts.append(f"<td>{_e(row.reasoning_effort) if row.reasoning_effort else ''}</td>")
    parts.append(f'\n        <td class="num avg">{_e(pct(row.average, 1))}')
    if row.std is not None:
        parts.append(f'<span class="pm"> ± {_e(pct(row.std, 1))}</span>')
    parts.append('</td>\n        <td class="num runs">')
    if row.kind == "agent":
        parts.append('<span class="muted" title="the source gives this score but not over how many runs">–</span>'
                     if row.runs is None else _e(row.runs))
    parts.append("</td>\n        ")
    if with_source:
        parts.append('<td class="source">')
        if from_runs:
            c = row.run_cells
            parts.append(
                f'<span class="n-runs">{_e(row.n_runs)} ingested run{_plural(row.n_runs)}</span> '
                f'<span class="muted run-cells" title="Runs ({_e(row.runs)}) counts repeated runs of the whole '
                f'suite; each has {_e(c["per_run"])} cells (base models × benchmarks), one ingested run at most per '
                "cell. A cell without a scored, unflagged run takes the base model's score.\">"
                f'for {_e(row.n_cells)} cells ({_e(row.runs)} run{_plural(row.runs)} × {_e(c["per_run"])}): '
                f'{_e(c["scored"])} scored, {_e(c["not_scored"])} flagged or not scored, {_e(c["no_run"])} without a '
                f"run{facet_words}</span>")
            if row.delta is not None:
                parts.append(f' <span class="delta" title="this row minus the published row of the same agent">'
                             f"({_e(pct(row.delta, 1))} vs published)</span>")
        elif row.kind == "agent":
            parts.append("published aggregate")
        else:
            parts.append("published baseline")
        parts.append("</td>")
    parts.append("\n        ")
    if board.rank_changes:
        parts.append('<td class="num rank-change">')
        if row.source != "runs":
            parts.append('<span class="muted" title="Published rows have no per-run verdicts: the judging rules '
                         'apply only to rows computed from runs">—</span>')
        elif row.rank_change:
            parts.append(f"{row.rank_change:+d}")
        elif row.rank_change == 0:
            parts.append("0")
        parts.append("</td>")
    parts.append("\n        ")
    key_q = _e(quote(row.key))
    for bid, cell in row.cells.items():
        b = _e(bid)
        parts.append(f'\n        <td class="num score" style="--shade: {_e(fixed(cell.shade, 3))}" '
                     f'data-benchmark="{b}"\n            ')
        if cell.std is not None:
            parts.append(f'title="± {_e(pct(cell.std, 1))} ({std_runs if from_runs else std_published})"')
        parts.append(">\n          ")
        score = _e(pct(cell.score, 1))
        if from_runs:
            parts.append(f'<a class="cell-link" href="{runs_href}{key_q}&amp;benchmark={b}{link_tail}" '
                         f'title="the runs behind this cell">{score}</a>')
            ids = cell.run_ids
            if ids and not static_export:
                if len(ids) == 1:
                    parts.append(f' <a class="cell-compare" href="{_e(reverse("traces:run", args=[ids[0]]))}'
                                 "#compare-with\" title=\"compare this run with the other agents' runs and the "
                                 'attempts of its cell">⇄</a>')
                else:
                    first = "the first 4 of " if len(ids) > 4 else ""
                    parts.append(f' <a class="cell-compare" href="{compare_url}?runs='
                                 f'{",".join(_e(i) for i in ids[:4])}" title="compare {first}the {len(ids)} runs '
                                 'of this cell side by side">⇄</a>')
        else:
            parts.append(score)
        if cell.fallbacks:
            parts.append(f'<span class="fallback" title="{_e(cell.fallback_note)}">*</span>')
        parts.append("\n        </td>\n        ")
    parts.append("\n      </tr>\n    ")
    return "".join(parts)
