"""The analysis page's per-agent table rows written in Python (``traces.analysis_html``, issue 24) are the text the
template loops of ``analysis.html`` wrote, byte for byte: every branch (a facet used by no run, no self-reported or
verified mean, no ratio, no best run, no budget, no timed trace, no idle gaps, zeros against None) and hostile text
in every field that reaches the page (agent names and keys, facet and phase keys, run ids, the suite)."""
from __future__ import annotations

import pytest
from django.template import Context, Template
from django.urls import reverse

from traces.analysis_html import calibration_rows, method_mix_rows, time_use_rows
from traces.selectors.analysis import AgentCalibration, AgentTimeUse, MethodMix

# The loops as analysis.html had them before they were written in Python (main at e3846f9), the reference.
LOAD = "{% load trace_format scores %}{% url 'traces:runs' as runs_url %}"
METHOD_MIX_LOOP = LOAD + """{% for row in data.method_mix %}
      <tr data-agent="{{ row.key }}"><td>{{ row.agent }}</td>
        <td class="num"><a href="{{ runs_url }}?agent={{ row.key|urlencode }}&amp;suite={{ suite }}&amp;latest=1">{{ row.runs }}</a></td>
        {% for m, n in row.counts.items %}<td class="num" data-facet="{{ m }}">{% if n %}<a href="{{ runs_url }}?agent={{ row.key|urlencode }}&amp;facet={{ m }}&amp;suite={{ suite }}&amp;latest=1">{{ n }}</a>{% else %}<span class="muted">0</span>{% endif %}</td>{% endfor %}</tr>
    {% endfor %}"""
CALIBRATION_LOOP = LOAD + """{% for row in data.calibration %}
      <tr data-agent="{{ row.key }}"><td>{{ row.agent }}</td>
        <td class="num"><a href="{{ runs_url }}?agent={{ row.key|urlencode }}&amp;facet=self_score&amp;suite={{ suite }}&amp;latest=1">{{ row.runs }}</a></td>
        <td class="num">{{ row.mean_self|percent|default:"–" }}</td><td class="num">{{ row.mean_verified|percent|default:"–" }}</td>
        <td class="num ratio">{% if row.mean_ratio is not None %}{{ row.mean_ratio|fixed:2 }}x{% else %}n/a{% endif %}</td>
        <td class="num">{% if row.best_run %}<a href="{% url 'traces:run' row.best_run %}">{{ row.best_ratio|fixed:2 }}x</a>{% else %}n/a{% endif %}</td></tr>
    {% endfor %}"""
TIME_USE_LOOP = LOAD + """{% for row in data.time_use %}
      <tr data-agent="{{ row.key }}"><td>{{ row.agent }}</td>
        <td class="num"><a href="{{ runs_url }}?agent={{ row.key|urlencode }}&amp;suite={{ suite }}&amp;latest=1">{{ row.runs }}</a></td>
        <td class="num">{% if row.budget_fraction is not None %}{{ row.budget_fraction|percent }}%{% else %}–{% endif %}</td>
        {% for p, h in row.hours.items %}<td class="num" data-phase="{{ p }}">{% if row.runs_traced %}{{ h|hours_hm }}{% else %}–{% endif %}</td>{% endfor %}
        <td class="num">{{ row.idle_gaps|fixed:1|default:"–" }}</td></tr>
    {% endfor %}"""

HOSTILE = "<script>alert('x')</script> & \"q\" /?#%é"


def _method_mix() -> list[MethodMix]:
    return [
        MethodMix(key="opus", agent="Opus 4.6", runs=28, counts={"sft": 12, "grpo": 0, "lora": 3}),
        MethodMix(key=HOSTILE, agent=HOSTILE, runs=0, counts={HOSTILE: 2, "dpo": 0}),
        MethodMix(key="m a+b", agent="", runs=1, counts={}),
    ]


def _calibration() -> list[AgentCalibration]:
    return [
        AgentCalibration(key="opus", agent="Opus 4.6", runs=3, mean_ratio=1.23456, mean_self=0.41234,
                         mean_verified=0.3125, best_run="r-1", best_ratio=0.995),
        AgentCalibration(key=HOSTILE, agent=HOSTILE, runs=0, mean_ratio=None, mean_self=None, mean_verified=None,
                         best_run=None, best_ratio=None),
        AgentCalibration(key="z", agent="Zero", runs=1, mean_ratio=0.0, mean_self=0.0, mean_verified=0.00049,
                         best_run="r<&\"'>x y", best_ratio=0.0),
        AgentCalibration(key="h", agent="Half", runs=2, mean_ratio=2.005, mean_self=0.99951, mean_verified=1.0,
                         best_run="", best_ratio=2.005),
    ]


def _time_use() -> list[AgentTimeUse]:
    hours = {"setup": 0.5, "training": 2.0166, "evaluation": 0.0}
    return [
        AgentTimeUse(key="opus", agent="Opus 4.6", runs=28, runs_timed=27, budget_fraction=0.7345, runs_traced=26,
                     hours=hours, idle_gaps=1.25),
        AgentTimeUse(key=HOSTILE, agent=HOSTILE, runs=2, runs_timed=0, budget_fraction=None, runs_traced=0,
                     hours={**hours, HOSTILE: 1.0}, idle_gaps=None),
        AgentTimeUse(key="z", agent="Zero", runs=1, runs_timed=1, budget_fraction=0.0, runs_traced=1,
                     hours={"setup": 9.99}, idle_gaps=0.0),
    ]


class _Data:
    """What the loops read of the analysis (``data.method_mix`` and so on)."""

    def __init__(self) -> None:
        self.method_mix, self.calibration, self.time_use = _method_mix(), _calibration(), _time_use()


@pytest.mark.parametrize("suite", ["posttrainbench", HOSTILE])
@pytest.mark.parametrize("loop, write, rows", [
    (METHOD_MIX_LOOP, method_mix_rows, "method_mix"), (CALIBRATION_LOOP, calibration_rows, "calibration"),
    (TIME_USE_LOOP, time_use_rows, "time_use")])
def test_rows_are_the_template_loops_text(loop, write, rows, suite):
    data = _Data()
    expected = Template(loop).render(Context({"data": data, "suite": suite}))
    got = write(getattr(data, rows), runs_url=reverse("traces:runs"), suite=suite)
    assert got == expected
    assert "<script>" not in got and got.count("<tr ") == len(getattr(data, rows))
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;q&quot;" in got


def test_rows_write_the_figures():
    """Spot values, so that a change of both the loop and the Python is still seen."""
    url = reverse("traces:runs")
    mix = method_mix_rows(_method_mix(), runs_url=url, suite="s")
    assert (f'<td class="num" data-facet="sft"><a href="{url}?agent=opus&amp;facet=sft&amp;suite=s&amp;latest=1">'
            '12</a></td><td class="num" data-facet="grpo"><span class="muted">0</span></td>') in mix
    cal = calibration_rows(_calibration(), runs_url=url, suite="s")
    assert '<td class="num">41.2</td><td class="num">31.2</td>\n        <td class="num ratio">1.23x</td>' in cal
    assert f'<a href="{reverse("traces:run", args=["r-1"])}">1.00x</a>' in cal  # 0.995 rounded half up
    assert '<td class="num">–</td><td class="num">–</td>\n        <td class="num ratio">n/a</td>' in cal
    tu = time_use_rows(_time_use(), runs_url=url, suite="s")
    assert '<td class="num">73.5%</td>' in tu and '<td class="num" data-phase="training">2:01</td>' in tu
    assert '<td class="num">1.3</td></tr>' in tu  # 1.25 rounded half up, as floatformat
