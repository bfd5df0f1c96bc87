"""The leaderboard table's body rows written in Python (``leaderboard.board_html``, issue 24) are the text the
template loop of ``_board.html`` wrote, byte for byte: every branch (published and runs rows, baselines, badges,
deltas, rank changes, fallbacks, one run / a few / more than four behind a cell, the static copy) and hostile text in
every field that reaches the page (agent names, keys, scaffolds, base model and facet parameters, run ids)."""
from __future__ import annotations

import pytest
from django.template import Context, Template
from django.urls import reverse

from leaderboard.board_html import rows_html
from leaderboard.schemas import BaseModel, Benchmark, Cell, Leaderboard, Row

# The loop as _board.html had it before it was written in Python (main at ae6707d), the reference.
TEMPLATE_LOOP = """{% load scores %}{% url 'traces:compare' as compare_url %}{% for row in board.rows %}
      <tr class="{{ row.kind }} source-{{ row.source }}" data-agent="{{ row.key }}" data-source="{{ row.source }}">
        <td>{% if row.rank %}{{ row.rank }}{% else %}<span class="muted" title="reference row, unranked">–</span>{% endif %}</td>
        <td class="agent">{{ row.agent }}{% if row.synthetic %} <span class="badge synthetic" title="computed from generated demo runs, not real results">synthetic</span>{% endif %}{% if row.overridden %} <span class="badge override" title="a reviewer overrode a verdict of a run behind this row">overridden</span>{% endif %}</td>
        {% if board.has_scaffolds %}<td>{{ row.scaffold|default:"" }}</td>{% endif %}
        {% if board.has_efforts %}<td>{{ row.reasoning_effort|default:"" }}</td>{% endif %}
        <td class="num avg">{{ row.average|pct:1 }}{% if row.std is not None %}<span class="pm"> ± {{ row.std|pct:1 }}</span>{% endif %}</td>
        <td class="num runs">{% if row.kind == "agent" %}{% if row.runs is None %}<span class="muted" title="the source gives this score but not over how many runs">–</span>{% else %}{{ row.runs }}{% endif %}{% endif %}</td>
        {% if params.source != "published" %}<td class="source">{% if row.source == "runs" %}{% with c=row.run_cells %}<span class="n-runs">{{ row.n_runs }} ingested run{{ row.n_runs|pluralize }}</span> <span class="muted run-cells" title="Runs ({{ row.runs }}) counts repeated runs of the whole suite; each has {{ c.per_run }} cells (base models × benchmarks), one ingested run at most per cell. A cell without a scored, unflagged run takes the base model's score.">for {{ row.n_cells }} cells ({{ row.runs }} run{{ row.runs|pluralize }} × {{ c.per_run }}): {{ c.scored }} scored, {{ c.not_scored }} flagged or not scored, {{ c.no_run }} without a run{% if params.facet %} using {{ params.facet }}{% endif %}</span>{% endwith %}{% if row.delta is not None %} <span class="delta" title="this row minus the published row of the same agent">({{ row.delta|pct:1 }} vs published)</span>{% endif %}{% elif row.kind == "agent" %}published aggregate{% else %}published baseline{% endif %}</td>{% endif %}
        {% if board.rank_changes %}<td class="num rank-change">{% if row.source != "runs" %}<span class="muted" title="Published rows have no per-run verdicts: the judging rules apply only to rows computed from runs">—</span>{% elif row.rank_change %}{{ row.rank_change|stringformat:"+d" }}{% elif row.rank_change == 0 %}0{% endif %}</td>{% endif %}
        {% for bid, cell in row.cells.items %}
        <td class="num score" style="--shade: {{ cell.shade|fixed:3 }}" data-benchmark="{{ bid }}"
            {% if cell.std is not None %}title="± {{ cell.std|pct:1 }} ({% if row.source == 'runs' %}{{ board.cell_std_text.runs }}{% else %}{{ board.cell_std_text.published }}{% endif %})"{% endif %}>
          {% if row.source == "runs" %}<a class="cell-link" href="{{ runs_url }}?agent={{ row.key|urlencode }}&amp;benchmark={{ bid }}{% if params.base_model %}&amp;base_model={{ params.base_model|urlencode }}{% endif %}{% if params.facet %}&amp;facet={{ params.facet|urlencode }}{% endif %}" title="the runs behind this cell">{{ cell.score|pct:1 }}</a>{% if cell.run_ids and not request.static_export %} {% if cell.run_ids|length == 1 %}<a class="cell-compare" href="{% url 'traces:run' cell.run_ids.0 %}#compare-with" title="compare this run with the other agents' runs and the attempts of its cell">⇄</a>{% else %}<a class="cell-compare" href="{{ compare_url }}?runs={{ cell.run_ids|slice:':4'|join:',' }}" title="compare {% if cell.run_ids|length > 4 %}the first 4 of {% endif %}the {{ cell.run_ids|length }} runs of this cell side by side">⇄</a>{% endif %}{% endif %}{% else %}{{ cell.score|pct:1 }}{% endif %}{% if cell.fallbacks %}<span class="fallback" title="{{ cell.fallback_note }}">*</span>{% endif %}
        </td>
        {% endfor %}
      </tr>
    {% endfor %}"""

HOSTILE = "<script>alert('x')</script> & \"q\""


def _rows() -> list[Row]:
    def cells(**kw) -> dict[str, Cell]:
        return {"gsm8k": Cell(**{"score": 0.4123, "std": 0.0125, "shade": 0.33333, **kw}),
                "a&b<i>": Cell(score=0.0, std=None, shade=1.0, fallbacks=[("Qwen3-4B", "flagged"),
                                                                        (HOSTILE, "facet")])}
    return [
        Row(key="opus", agent="Opus 4.6", kind="agent", scaffold="Claude Code", reasoning_effort="high",
            model_family=None, average=0.5, std=0.01, runs=3, cells=cells(), rank=1),
        Row(key="frog", agent="GPT-5.5", kind="agent", scaffold=None, reasoning_effort=None, model_family=None,
            average=0.2, std=None, runs=None, cells=cells(std=None), rank=2),
        Row(key="base-zeroshot", agent="Base", kind="baseline", scaffold=None, reasoning_effort=None,
            model_family=None, average=0.1, std=None, runs=0, cells=cells()),
        Row(key=HOSTILE + "/k?=&", agent=HOSTILE, kind="agent", scaffold=HOSTILE, reasoning_effort=HOSTILE,
            model_family=None, average=0.3, std=0.002, runs=2, rank=3, source="runs", n_runs=13, n_scored=11,
            n_cells=56, synthetic=True, overridden=True, delta=-0.0345, rank_change=2,
            cells=cells(run_ids=["r-1"])),
        Row(key="m1", agent="m1 (codex)", kind="agent", scaffold="Codex CLI", reasoning_effort=None,
            model_family=None, average=0.3, std=None, runs=1, rank=4, source="runs", n_runs=1, n_scored=1, n_cells=28,
            rank_change=0, cells={"gsm8k": Cell(score=0.3, std=0.05, run_ids=["a", "b<", "c", "d", "e"]),
                                  "a&b<i>": Cell(score=0.1, run_ids=["x", "y"])}),
        Row(key="m2", agent="m2", kind="agent", scaffold="", reasoning_effort="", model_family=None, average=0.1,
            std=None, runs=1, rank=5, source="runs", n_runs=0, n_scored=0, n_cells=28, rank_change=-3,
            cells={"gsm8k": Cell(score=0.1), "a&b<i>": Cell(score=0.2, run_ids=["r<&\"'>?#x y"])}),
    ]


def _board(base_model: str | None, verdicts: str, has: bool) -> Leaderboard:
    return Leaderboard(
        suite="posttrainbench", suite_name="PTB", benchmarks=[Benchmark(id="gsm8k", name="GSM8K", metric="acc",
                                                                        weight=0.5)],
        base_models=[BaseModel(id="Qwen3-4B-Base", hf_id="Qwen/Qwen3-4B-Base", name="Qwen3-4B", instruct_id="i")],
        base_model=base_model, sort="rank", direction="asc", rows=_rows(), weights_note="", derived_weights={},
        verdicts=verdicts, has_scaffolds=has, has_efforts=has)


@pytest.mark.parametrize("static_export", [False, True])
@pytest.mark.parametrize("source, base_model, facet, verdicts, has", [
    ("all", None, "", "era", True), ("runs", HOSTILE, HOSTILE, "any", True), ("published", None, "", "era", False),
    ("runs", "Qwen3-4B-Base", "library:trl", "majority", False)])
def test_rows_are_the_template_loops_text(source, base_model, facet, verdicts, has, static_export):
    board = _board(base_model, verdicts, has)
    params = {"source": source, "base_model": base_model or "", "facet": facet}

    class Request:  # what the loop read of the request
        pass

    request = Request()
    request.static_export = static_export  # type: ignore[attr-defined]
    runs_url = reverse("traces:runs")
    expected = Template(TEMPLATE_LOOP).render(Context({"board": board, "params": params, "runs_url": runs_url,
                                                       "request": request}))
    got = rows_html(board, params, runs_url=runs_url, compare_url=reverse("traces:compare"),
                    static_export=static_export)
    assert got == expected
    assert "<script>" not in got and got.count("<tr ") == 6
    assert ("badge override" in got) and ("cell-compare" in got) != static_export
