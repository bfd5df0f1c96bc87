"""The trace viewer's steps written in Python (``traces.steps_html``, issue 24) are the text the template loop of
``_steps.html`` wrote, byte for byte: every branch (kinds, labels on calls and on events, tools, long call ids,
errors, evidence rules named and unknown, times naive and aware, time left and over budget, inputs by tool and cut,
outputs short, long and cut, marks of a search, the focused step, a trace other than the agent's) and hostile text in
every field that reaches the page; and the pages that include it still carry its steps."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from django.template import Context, Template

from traces.schemas import Step
from traces.steps_html import step_items
from traces.templatetags.trace_format import PREVIEW_CHARS, PREVIEW_LINES, is_long, preview, split_preview
from traces.vocabulary import RULE_TEXT

# The loop as _steps.html had it before it was written in Python (main at 7141d08), the reference; since, a long
# output's rest under its preview holds only the lines after the preview (its lines were shown twice).
LOOP = """{% load humanize trace_format %}{% for s in page.steps %}
<li class="step kind-{{ s.kind }}{% if s.is_error %} error{% endif %}{% if s.suspicious %} suspicious{% endif %}{% if s.index == focus %} focus{% endif %}"
    id="step-{{ s.index }}" data-index="{{ s.index }}" tabindex="-1">
  <div class="step-head">
    <a class="idx" href="{% url 'traces:run' run.id %}?{% if params.trace != 'agent' %}trace={{ params.trace|urlencode }}&amp;{% endif %}step={{ s.index }}#step-{{ s.index }}">#{{ s.index }}</a>
    <span class="kind">{{ s.kind }}</span>{% if s.label and s.kind != "tool_call" %} <span class="badge label">{{ s.label }}</span>{% endif %}{% if s.tool %} <span class="tool">{{ s.tool }}</span>{% endif %}{% if s.call_id %} <span class="call-id muted" title="tool call id: pairs a call with its result">{{ s.call_id|truncatechars:40 }}</span>{% endif %}
    {% if s.is_error %}<span class="badge flagged">error</span>{% endif %}
    {% for r in s.suspicious %}{% for k, t in rule_text.items %}{% if k == r %}<span class="badge suspicious">{{ t }}</span>{% endif %}{% endfor %}{% endfor %}
    <span class="when">{% if s.time %}{{ s.time|date:"Y-m-d H:i:s" }} UTC{% endif %}{% if s.elapsed_s is not None %} · <span class="elapsed" title="{{ s.elapsed_s|hm }} (h:mm) since the trace's first step">+{{ s.elapsed_s|hm }}</span>{% endif %}{% if s.remaining_s is not None %} · {% if s.remaining_s < 0 %}<span class="remaining over" title="{{ s.remaining_s|hm|slice:'1:' }} (h:mm) past the {{ run.budget_hours|hours_hm }} budget">{{ s.remaining_s|hm|slice:"1:" }} over budget</span>{% else %}<span class="remaining" title="{{ s.remaining_s|hm }} (h:mm) of the {{ run.budget_hours|hours_hm }} budget left">{{ s.remaining_s|hm }} left</span>{% endif %}{% endif %}</span>
  </div>
  {% if s.label and s.kind == "tool_call" %}<p class="call-label" title="the call's description and settings, as the agent wrote them">{{ s.label|highlight:mark_query }}</p>{% endif %}
  {% if s.input %}{% if mark_query %}{% with shown=s|readable_input %}{% if shown.label %}<p class="tool-file"><code>{{ shown.label|highlight:mark_query }}</code></p>{% endif %}<pre class="input tool-{{ shown.kind }}"><code>{{ shown.text|highlight:mark_query }}</code></pre>{% endwith %}{% else %}{% with shown=s|tool_input %}{% if shown.label %}<p class="tool-file"><code>{{ shown.label }}</code>{% if shown.kind == "diff" %} <span class="muted">edited</span>{% endif %}</p>{% endif %}<pre class="input hl tool-{{ shown.kind }}" data-render="{{ shown.kind }}"><code>{{ shown.html }}</code></pre>{% endwith %}{% endif %}
    {% if s.input_not_shown %}<p class="not-shown">{{ s.input_not_shown|intcomma }} bytes not shown · <a href="{% url 'traces:step_text' run.id s.index %}?field=input{% if params.trace != 'agent' %}&amp;trace={{ params.trace|urlencode }}{% endif %}">whole input</a></p>{% endif %}{% endif %}
  {% if s.output %}{% if s.output|is_long %}<pre class="output">{{ s.output|preview|highlight:mark_query }}</pre>
    <details class="more"{% if s.output|clipped|after_preview|has_match:mark_query %} open{% endif %}><summary>show all {{ s.output|line_count }} lines{% if s.output_not_shown %} shown here{% endif %}</summary><pre class="output">{{ s.output|clipped|after_preview|highlight:mark_query }}</pre></details>
  {% else %}<pre class="output">{{ s.output|highlight:mark_query }}</pre>{% endif %}
    {% if s.output_not_shown %}<p class="not-shown">{{ s.output_not_shown|intcomma }} bytes not shown · <a href="{% url 'traces:step_text' run.id s.index %}?field=output{% if params.trace != 'agent' %}&amp;trace={{ params.trace|urlencode }}{% endif %}">whole output</a></p>{% endif %}{% endif %}
</li>
{% endfor %}"""

HOSTILE = "<script>alert('x')</script> & \"q\" /?#%é loss"
LONG = "\n".join(f"line {n} <b>loss</b> & {HOSTILE}" for n in range(40))
START = datetime(2026, 4, 5, 10, 0, 0)


class _Run:
    """What the loop reads of the run: its id and budget."""

    def __init__(self, budget_hours: float | None) -> None:
        self.id, self.budget_hours = "0123abcd4567ef89", budget_hours


def _steps() -> list[Step]:
    write = json.dumps({"file_path": "/task/train.py", "content": f"print('{HOSTILE}')\n"})
    edit = json.dumps({"file_path": "a<b>.py", "old_string": "x = 1\n", "new_string": f"x = '{HOSTILE}'\n"})
    return [
        Step(index=0, kind="text", output=HOSTILE, time=START, elapsed_s=0.0, remaining_s=3600.0),
        Step(index=1, kind="assistant", output=LONG, time=START.replace(tzinfo=timezone.utc) + timedelta(seconds=61),
             elapsed_s=61.7, remaining_s=-125.0, suspicious=["hf_upload", HOSTILE]),
        Step(index=2, kind="tool_call", tool="Bash", label=HOSTILE, call_id="toolu_" + "A" * 60,
             input=json.dumps({"command": f"echo '{HOSTILE}'"}), input_bytes=10_000, is_error=True),
        Step(index=3, kind="tool_call", tool="Write", input=write, suspicious=list(RULE_TEXT)[:2]),
        Step(index=4, kind="tool_call", tool="Edit", input=edit, call_id=HOSTILE),
        Step(index=5, kind="tool_call", tool=HOSTILE, input=f"not json {HOSTILE}", output="", label=""),
        Step(index=6, kind="tool_result", tool="Bash", call_id="call_1", output=LONG, output_bytes=2_000_000,
             is_error=True, elapsed_s=None, remaining_s=0.0),
        Step(index=7, kind="system", label=f"rate limit {HOSTILE}", output="short", output_bytes=1_234_567),
        Step(index=8, kind="tool_call", tool="Read", input=json.dumps({"path": HOSTILE}), input_bytes=None,
             time=START + timedelta(days=400, hours=5)),
        Step(index=9, kind="thinking", output="x" * 1_500, remaining_s=-0.5),
        Step(index=10, kind="result", input="", output="\n\n"),
    ]


@pytest.mark.parametrize("trace", ["agent", "judge:gpt5_4", HOSTILE])
@pytest.mark.parametrize("mark_query", ["", "loss", ["LOSS", "<b>", HOSTILE], HOSTILE])
@pytest.mark.parametrize("focus", [None, 2])
@pytest.mark.parametrize("budget_hours", [10.0, None])
def test_the_steps_are_the_loops_text(trace, mark_query, focus, budget_hours):
    steps, run = _steps(), _Run(budget_hours)
    context = {"page": SimpleNamespace(steps=steps), "run": run, "params": {"trace": trace}, "focus": focus,
               "mark_query": mark_query, "rule_text": RULE_TEXT}
    expected = Template(LOOP).render(Context(context))
    got = step_items(steps, run_id=run.id, trace=trace, budget_hours=budget_hours, focus=focus,
                     mark_query=mark_query, rule_text=RULE_TEXT)
    assert got == expected
    assert "<script>" not in got  # hostile text escaped everywhere
    tagged = Template("{% load trace_format %}{% step_items %}").render(Context(context))
    assert tagged == expected  # the template tag _steps.html calls reads the same context


def test_no_steps_write_nothing():
    assert step_items([], run_id="", trace="agent", budget_hours=None, focus=None, mark_query="", rule_text={}) == ""
    assert Template("{% load trace_format %}{% step_items %}").render(Context({})) == ""


@pytest.mark.parametrize("path", ["train.py", "/root/run/train.py", "Makefile", "src/CMakeLists.txt", "conf.yaml",
                                  "notes", "a.unknownext", "dir.d/", "x.PY", "Dockerfile", "setup.cfg", ".bashrc"])
def test_a_files_lexer_is_pygments_own_for_its_name(path):
    from pygments.lexers import TextLexer, get_lexer_for_filename
    from pygments.util import ClassNotFound

    from traces.tool_input import _lexer_for

    try:
        expected = get_lexer_for_filename(path, stripnl=False)
    except ClassNotFound:
        expected = TextLexer(stripnl=False)
    for _ in range(2):  # looked up, then kept
        found = _lexer_for(path)
        assert type(found) is type(expected) and found.options == expected.options


@pytest.mark.parametrize("text", [LONG, "x" * 1_500, "a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\n", "1\n2\n3\n4\n5\n6\n", "\n" * 9,
                                  "short", ""])
def test_a_preview_and_the_rest_under_it_are_the_text_once(text):
    head, rest = split_preview(text)
    between = text[len(head):len(text) - len(rest)]
    assert text == head + between + rest and between in ("", "\n", "\r\n")
    assert head == preview(text) and len(head) <= PREVIEW_CHARS and len(head.splitlines()) <= PREVIEW_LINES
    assert is_long(text) == (rest != "")
