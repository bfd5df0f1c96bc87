"""The trace viewer's steps as HTML, written in Python: the ``<li class="step">`` items that ``_steps.html`` rendered
with one Django template loop per step (the run page, its step pages, the htmx "load more" and search answers).

A run page shows 200 steps (``ptbsite.distill.STEPS_PER_PAGE`` in the static export): the loop's ~60 template nodes per
step were ~75 % of the page's rendering and the largest part of the static export's CPU per run after its reads
(issue 24, bench/RESULTS.md); here a step costs a few string operations. The text is the loop's, byte for byte:
every value from the trace or the URL is escaped as the template's autoescape escapes it (``conditional_escape``:
text already marked safe, as ``highlight`` and the tool input's Pygments HTML are, is written as it is), and the
filters are the ones the loop called (``highlight``, ``tool_input``, ``readable_input``, ``hm``, ``hours_hm``,
``intcomma``, ``truncatechars``, ``urlencode``). ``tests/test_steps_html.py`` compares the output with the loop it
replaced, over every branch and hostile text in every field.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from django.contrib.humanize.templatetags.humanize import intcomma
from django.template.defaultfilters import truncatechars, urlencode
from django.urls import reverse
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import template_localtime

from .schemas import Step
from .templatetags.trace_format import (after_preview, clipped, has_match, highlight, hm, hours_hm, is_long, line_count,
                                        preview, readable_input, tool_input)

Mark = str | list[str] | tuple[str, ...] | None
ERROR_BADGE = '<span class="badge flagged">error</span>'


def _e(value: object) -> str:
    """``value`` as the template's ``{{ value }}`` writes it: safe text as it is, anything else ``str()`` escaped
    (the steps' values are text and integers, which the template's localization writes as ``str`` does)."""
    return conditional_escape(value)


def _when(time: datetime) -> str:
    """The ``date:"Y-m-d H:i:s"`` filter's text of a step's time (``django.utils.dateformat``: ``%04d`` year, the
    rest ``%02d``), in the current time zone as the template shows an aware time."""
    t = template_localtime(time)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d} {t.hour:02d}:{t.minute:02d}:{t.second:02d}"


def step_items(steps: Iterable[Step], *, run_id: str, trace: str | None, budget_hours: float | None,
               focus: int | None, mark_query: Mark, rule_text: Mapping[str, str]) -> SafeString:
    """The ``<li class="step">`` item of each of ``steps``, each preceded by a newline and followed by one, as the
    loop wrote them: ``run_id``'s links (the step's deep link, the whole input or output past what is shown),
    ``trace`` the trace shown (``params.trace``: a trace other than ``agent`` is named in the links),
    ``budget_hours`` the run's budget (the time left), ``focus`` the step opened, ``mark_query`` what the steps
    mark (``traces.views._mark_query``), ``rule_text`` {evidence rule: its badge's text}."""
    out: list[str] = []
    run_url = ""
    trace_query = f"trace={_e(urlencode(trace))}&amp;" if trace != "agent" else ""
    trace_after = f"&amp;trace={_e(urlencode(trace))}" if trace != "agent" else ""
    budget = _e(hours_hm(budget_hours))
    for s in steps:
        if not run_url:
            run_url = _e(reverse("traces:run", args=[run_id]))
        i = str(s.index)
        kind = _e(s.kind)
        classes = (" error" if s.is_error else "") + (" suspicious" if s.suspicious else "") + (
            " focus" if s.index == focus else "")
        head = f'    <span class="kind">{kind}</span>'
        if s.label and s.kind != "tool_call":
            head += f' <span class="badge label">{_e(s.label)}</span>'
        if s.tool:
            head += f' <span class="tool">{_e(s.tool)}</span>'
        if s.call_id:
            head += (' <span class="call-id muted" title="tool call id: pairs a call with its result">'
                     f'{_e(truncatechars(s.call_id, 40))}</span>')
        badges = "".join(f'<span class="badge suspicious">{_e(rule_text[r])}</span>'
                         for r in s.suspicious if r in rule_text)
        when = f"{_when(s.time)} UTC" if s.time else ""
        if s.elapsed_s is not None:
            elapsed = _e(hm(s.elapsed_s))
            when += (f' · <span class="elapsed" title="{elapsed} (h:mm) since the trace\'s first step">+{elapsed}'
                     "</span>")
        if s.remaining_s is not None:
            left = hm(s.remaining_s)
            if s.remaining_s < 0:
                over = _e(left[1:])
                when += (f' · <span class="remaining over" title="{over} (h:mm) past the {budget} budget">{over} '
                         "over budget</span>")
            else:
                when += (f' · <span class="remaining" title="{_e(left)} (h:mm) of the {budget} budget left">'
                         f"{_e(left)} left</span>")
        call_label = (f'<p class="call-label" title="the call\'s description and settings, as the agent wrote them">'
                      f"{_e(highlight(s.label, mark_query))}</p>" if s.label and s.kind == "tool_call" else "")
        out.append(
            f'\n<li class="step kind-{kind}{classes}"\n    id="step-{i}" data-index="{i}" tabindex="-1">\n'
            f'  <div class="step-head">\n'
            f'    <a class="idx" href="{run_url}?{trace_query}step={i}#step-{i}">#{i}</a>\n'
            f"{head}\n"
            f"    {ERROR_BADGE if s.is_error else ''}\n"
            f"    {badges}\n"
            f'    <span class="when">{when}</span>\n'
            f"  </div>\n"
            f"  {call_label}\n"
            f"  {_input(s, run_id, trace_after, mark_query)}\n"
            f"  {_output(s, run_id, trace_after, mark_query)}\n"
            "</li>\n")
    return mark_safe("".join(out))


def _not_shown(s: Step, run_id: str, field: str, size: int, trace_after: str) -> str:
    url = _e(reverse("traces:step_text", args=[run_id, s.index]))
    return (f'<p class="not-shown">{_e(intcomma(size))} bytes not shown · <a href="{url}?field={field}{trace_after}">'
            f"whole {field}</a></p>")


def _input(s: Step, run_id: str, trace_after: str, mark_query: Mark) -> str:
    """A step's input (by its tool: ``tool_input``; as plain text marking ``mark_query``: ``readable_input``) and
    the note of the bytes not shown; "" without an input."""
    if not s.input:
        return ""
    if mark_query:
        read = readable_input(s)
        label = f'<p class="tool-file"><code>{_e(highlight(read.label, mark_query))}</code></p>' if read.label else ""
        shown = f'{label}<pre class="input tool-{_e(read.kind)}"><code>{_e(highlight(read.text, mark_query))}</code></pre>'
    else:
        rendered = tool_input(s)
        label = ""
        if rendered.label:
            edited = ' <span class="muted">edited</span>' if rendered.kind == "diff" else ""
            label = f'<p class="tool-file"><code>{_e(rendered.label)}</code>{edited}</p>'
        kind = _e(rendered.kind)
        shown = f'{label}<pre class="input hl tool-{kind}" data-render="{kind}"><code>{_e(rendered.html)}</code></pre>'
    more = _not_shown(s, run_id, "input", s.input_not_shown, trace_after) if s.input_not_shown else ""
    return f"{shown}\n    {more}"


def _output(s: Step, run_id: str, trace_after: str, mark_query: Mark) -> str:
    """A step's output (a long one as its preview and the rest under it, collapsed unless the rest holds a match of
    ``mark_query``) and the note of the bytes not shown; "" without an output."""
    if not s.output:
        return ""
    if is_long(s.output):
        rest = after_preview(clipped(s.output))  # the preview's lines are not repeated under it
        opened = " open" if has_match(rest, mark_query) else ""
        cut = " shown here" if s.output_not_shown else ""
        shown = (f'<pre class="output">{_e(highlight(preview(s.output), mark_query))}</pre>\n'
                 f'    <details class="more"{opened}><summary>show all {line_count(s.output)} lines{cut}</summary>'
                 f'<pre class="output">{_e(highlight(rest, mark_query))}</pre></details>\n  ')
    else:
        shown = f'<pre class="output">{_e(highlight(s.output, mark_query))}</pre>'
    more = _not_shown(s, run_id, "output", s.output_not_shown, trace_after) if s.output_not_shown else ""
    return f"{shown}\n    {more}"
