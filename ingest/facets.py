"""Facets: what an agent did in a run, measured from its trace by documented rules, each citing its steps.

What the rules read and how they run: docs/facets.md.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from traces.steps import Step
from traces.vocabulary import (IDLE_GAP_S, METHOD_FACETS, PHASE_ORDER, PHASE_RULES, SHELL_TOOLS, UNPARSED, Phase,
                               call_text)

from . import evidence
from .rules import RuleSet


@dataclass(frozen=True, slots=True)
class Facet:
    """One fact about a run. ``value_num``: a count, a step number, or a fraction (``self_score``); None for
    presence facets. ``steps``: the supporting step indices, ascending."""

    facet: str
    value: str
    value_num: float | None
    steps: tuple[int, ...]


_NO_ANSWERS: dict[str, str | None] = {}  # shared by the settled calls the rules ask nothing of (never written)
_NO_GROUPS: dict[str, list[tuple[str | None, ...]]] = {}
_TOOL_NAMES: dict[str, str] = {}


def _tool_name(tool: str | None) -> str | None:
    """One string object per tool name (a long trace's settled calls share them)."""
    if tool is None:
        return None
    return _TOOL_NAMES.setdefault(tool, tool) if len(_TOOL_NAMES) < 10_000 else tool


_NO_SCAN: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


@dataclass(slots=True)
class Call:
    """A tool call with its text (see the module docstring), its head (a file tool's path, else the text),
    its phase and its result step (None when the trace has none).

    ``hits``/``sure``: the rules of :data:`CALL_RULES` that may / surely match the text (one RE2 pass,
    ``ingest.rules``); :meth:`search` runs a rule's Python pattern only when it may match, once per call, and
    :meth:`has` not even then when it surely does. ``data``: the
    input parsed as JSON when it starts with ``{`` (``evidence.INVALID_JSON`` when that fails, else
    ``evidence.UNPARSED``), shared with the evidence rules so no input is parsed twice.
    """

    step: Step
    text: str
    head: str
    phase: str = "other"
    result: Step | None = None
    hits: frozenset[str] = frozenset()
    sure: frozenset[str] = frozenset()
    data: object = UNPARSED
    _found: dict[str, re.Match[str] | None] | None = None
    _raw_scan: tuple[frozenset[str], frozenset[str]] | None = None
    _output_scan: tuple[frozenset[str], frozenset[str]] | None = None
    _first: dict[str, str | None] | None = None
    _groups: dict[str, list[tuple[str | None, ...]]] | None = None
    settled: bool = False

    @property
    def is_shell(self) -> bool:
        return (self.step.tool or "").lower() in SHELL_TOOLS

    def search(self, name: str) -> re.Match[str] | None:
        """The first match of the rule ``name`` of :data:`CALL_RULES` in the call's text, else None."""
        if name not in self.hits:
            return None
        if self._found is None:
            self._found = {}
        elif name in self._found:
            return self._found[name]
        found = self._found[name] = CALL_RULES.rules[name].search(self.text)
        return found

    def has(self, name: str) -> bool:
        """Whether the rule ``name`` of :data:`CALL_RULES` matches somewhere in the call's text."""
        return name in self.sure or self.first(name) is not None

    def first(self, name: str) -> str | None:
        """The text of the first match of the rule ``name`` of :data:`CALL_RULES` in the call's text, else None
        (after :meth:`settle`, the answer it kept). Raises AssertionError for a rule a settled call cannot
        answer (one :meth:`settle` did not ask)."""
        if self._first is not None and name in self._first:
            return self._first[name]
        if name not in self.hits:
            return None
        assert not self.settled, f"rule {name} was not answered when the call was settled"
        found = self.search(name)
        return found[0] if found else None

    def find_groups(self, name: str) -> list[tuple[str | None, ...]]:
        """The groups of every match of the rule ``name`` of :data:`CALL_RULES` (``dataset``, ``rollouts``) in the
        call's text, in order ([] when its scan rules the rule out). Raises AssertionError as :meth:`first`."""
        if self._groups is not None and name in self._groups:
            return self._groups[name]
        if name not in self.hits:
            return []
        assert not self.settled, f"rule {name} was not answered when the call was settled"
        return [m.groups() for m in CALL_RULES.rules[name].finditer(self.text)]

    def settle(self) -> None:
        """Answer now what :func:`extract` will ask of the call's text (:meth:`first` of the method, library,
        launch and trainer rules the scan may match, :meth:`find_groups` of ``dataset`` and ``rollouts``; nothing
        for an evaluation call, whose text extract never reads), then let go of the text, the head, the parsed
        input and the call step's input and output (the step keeps its index, kind, time, tool and call id).
        A trace read as a stream settles each call once its evidence marks are taken, so the calls of a long
        trace do not hold its text; the facts are the same (``tests/test_ingest_stream.py``)."""
        if self.settled:
            return
        if self.phase != "evaluation":
            self._first = {name: self.first(name) for name in _SETTLED_RULES if name in self.hits} or _NO_ANSWERS
            self._groups = {name: self.find_groups(name) for name in ("dataset", "rollouts") if name in self.hits} \
                or _NO_GROUPS
        step = self.step
        self.step = Step(index=step.index, kind=step.kind, time=step.time, tool=_tool_name(step.tool),
                         call_id=step.call_id)
        self.text = self.head = ""
        self.data = UNPARSED
        self._found = self._raw_scan = None  # the raw scan is the evidence marks', taken before
        self.settled = True

    @property
    def raw_scan(self) -> tuple[frozenset[str], frozenset[str]]:
        """``(may, sure)`` of :data:`CALL_RULES` over the raw input (what the evidence rules read): the text's
        when the input is its own text (most shell calls), else one more scan."""
        if self._raw_scan is None:
            assert not self.settled, "a settled call has let go of its input"
            raw = self.step.input or ""
            self._raw_scan = (self.hits, self.sure) if raw is self.text or raw == self.text else CALL_RULES.scan(raw)
        return self._raw_scan

    @property
    def output_scan(self) -> tuple[frozenset[str], frozenset[str]]:
        """``(may, sure)`` of :data:`OUTPUT_RULES` over the result's output (empty without a result)."""
        if self._output_scan is None:
            self._output_scan = OUTPUT_RULES.scan(self.result.output) if self.result is not None \
                else _NO_SCAN
        return self._output_scan


# "|" + a launcher running a script whose name continues with the rule's word (``python train_grpo.py``).
_RUN_SCRIPT = r"|\b(?:python3?|torchrun|deepspeed|launch)\s+(?:-\S+\s+)*[\w./-]*"
METHOD_RULES: dict[str, re.Pattern[str]] = {
    "sft": re.compile(r"\bSFT(?:Trainer|Config)\b|\btrl\s+sft\b|\bstage\s*[:=]\s*sft\b|\bDataCollatorForCompletionOnlyLM\b"
                      r"|\bSeq2SeqTrainer\b"),
    "lora": re.compile(r"\bLoraConfig\b|\bget_peft_model\b|--use_peft\b|--lora_r\b|\blora_r\s*[:=]"
                       r"|\bfinetuning_type\s*[:=]\s*lora\b"),
    "qlora": re.compile(r"\bload_in_4bit\s*[=:]\s*True\b|\bBitsAndBytesConfig\b|--load_in_4bit\b|\bbnb_4bit|\bQLoRA\b"),
    "grpo": re.compile(r"\bGRPO(?:Trainer|Config)\b|\badv_estimator\s*=\s*grpo\b|\btrl\s+grpo\b" + _RUN_SCRIPT + r"grpo[\w.-]*\.py\b"),
    "ppo": re.compile(r"\bPPO(?:Trainer|Config)\b|\badv_estimator\s*=\s*gae\b|\btrl\s+ppo\b" + _RUN_SCRIPT + r"_ppo[\w.-]*\.py\b"),
    "dpo": re.compile(r"\b(?:DPO|ORPO|KTO|CPO)(?:Trainer|Config)\b|\btrl\s+dpo\b|\bstage\s*[:=]\s*dpo\b"),
    "other_rl": re.compile(r"\b(?:RLOO|OnlineDPO|XPO|NashMD)(?:Trainer|Config)\b|\bREINFORCE\b"
                           r"|\badv_estimator\s*=\s*(?:rloo|reinforce_plus_plus|remax)\b"),
    "distillation": re.compile(evidence.LLM_API.pattern + r"|\bteacher(?:_model)?\b|\bdistill", re.I),
    "programmatic_data": re.compile(r"\bdef\s+(?:gen|generate|make|synth|create)\w*\(|\bsolver\b|\bsynthetic\b"
                                    r"|\bitertools\.product\b", re.I),
    "curriculum": re.compile(r"\bcurriculum\b|\beasy[_ -]to[_ -]hard\b|\bby difficulty\b"
                             r"|\bdifficulty[_ ](?:level|stage|schedule)|\bsort\w*\([^)\n]*difficulty", re.I),
}
LIBRARIES = ("trl", "peft", "unsloth", "verl", "openrlhf", "axolotl", "llamafactory", "torchtune", "deepspeed",
             "vllm", "transformers", "accelerate", "bitsandbytes")
_LIBRARY_CLI = {
    "accelerate": r"\baccelerate\s+launch\b", "deepspeed": r"(?:^|[\s;&])deepspeed\s", "llamafactory": r"\bllamafactory-cli\b",
    "axolotl": r"\baxolotl\s+train\b|-m\s+axolotl\b", "torchtune": r"\btune\s+run\b", "verl": r"-m\s+verl\b",
    "openrlhf": r"-m\s+openrlhf\b", "trl": r"\btrl\s+(?:sft|grpo|dpo)\b", "vllm": r"\bvllm\s+serve\b|\buse_vllm\s*=\s*True",
}
LIBRARY_RULES = {
    lib: re.compile(rf"(?:^|[\s;(\"'+])(?:from|import)\s+{lib}\b" + (f"|{_LIBRARY_CLI[lib]}" if lib in _LIBRARY_CLI else ""),
                    re.M)
    for lib in LIBRARIES
}
_DATASET_BUILDERS = {"json", "csv", "parquet", "text", "arrow", "webdataset", "imagefolder", "audiofolder", "pandas"}
_DATASET = re.compile(
    r"""load_dataset\(\s*(?:path\s*=\s*)?["']([^"'\s]+)["']"""
    r"""|(?:huggingface-cli|\bhf)\s+download\s+([\w.-]+/[\w.-]+)[^\n]*--repo-type[= ]dataset"""
    r"""|snapshot_download\([^)]*?repo_id\s*=\s*["']([^"']+)["'][^)]*repo_type\s*=\s*["']dataset"""
    r"""|snapshot_download\([^)]*?repo_type\s*=\s*["']dataset["'][^)]*repo_id\s*=\s*["']([^"']+)["']""")
_STEP_ON_LINE = re.compile(r"""(?:\b(?:global_)?step['"]?\s*[:=]\s*|\bstep\s+)(\d+)""", re.I)
_PROGRESS = re.compile(r"\b(\d+)/(\d+)\s*\[")
_ROLLOUTS = re.compile(r"\bnum_generations['\"]?\s*[=:]\s*(\d+)|--num_generations[= ](\d+)|\brollout\.n\s*=\s*(\d+)"
                       r"|\bn_samples_per_prompt['\"]?\s*[=:]\s*(\d+)|\brollouts per step\s*[:=]\s*(\d+)", re.I)
_EXAMPLES = re.compile(r"\b(?:wrote|generated|saved|created|writing|generating)\s+([\d,]+)\s+"
                       r"(?:new\s+|training\s+|synthetic\s+)?(?:examples|samples|problems|puzzles|boards|rows|records|"
                       r"items|conversations|pairs)\b", re.I)
_SCORE = re.compile(r"(?<![\w/])(accuracy|acc|pass@\d+|exact_match|win[_ ]rate|score)[\"']?[\s:=|↑\"']+"
                    r"(\d+(?:\.\d+)?)\s*(%)?", re.I)


_REWARD = re.compile("reward", re.I)  # the RE2 gate of rl_steps' ``"reward" in output.lower()`` (same texts)

_LIBRARY_NAMES = tuple((lib, f"library:{lib}") for lib in LIBRARIES)
# The rules whose first match extract reads (Call.first, Call.has), answered when a call settles.
_SETTLED_RULES = (*METHOD_RULES, "trainer_code", "launch", *(name for _, name in _LIBRARY_NAMES))


def _rule_family(*families: dict[str, re.Pattern[str]]) -> dict[str, re.Pattern[str]]:
    merged: dict[str, re.Pattern[str]] = {}
    for family in families:
        clash = merged.keys() & family.keys()
        if clash:
            raise ValueError(f"rule names used twice: {sorted(clash)}")
        merged.update(family)
    return merged


# Every rule that reads a tool call's text (phases, methods, libraries, datasets, rollouts) and every evidence
# rule that reads its raw input, in one RE2 Set: a shell command, which is both, is scanned once.
CALL_RULES = RuleSet(_rule_family(
    PHASE_RULES, METHOD_RULES, {name: LIBRARY_RULES[lib] for lib, name in _LIBRARY_NAMES},
    {"dataset": _DATASET, "rollouts": _ROLLOUTS}, evidence.PATTERNS))
# The rules that read a tool result's output: each non-evaluation call's output is scanned once.
OUTPUT_RULES = RuleSet({"rollouts": _ROLLOUTS, "examples": _EXAMPLES, "reward": _REWARD})


def _classify(text: str, head: str, hits: frozenset[str], sure: frozenset[str],
              search: Callable[[str], object]) -> str:
    """The phase from the text's scan (``hits``/``sure``: the rules that may / surely match) and
    ``search(name)``, the match of a rule of PHASE_RULES in the text."""

    def has(name: str) -> bool:
        if name == "eval" and not (head is text or head == text):
            return PHASE_RULES["eval"].search(head) is not None
        return name in sure or (name in hits and search(name) is not None)

    for phase, names in PHASE_ORDER:  # vocabulary.phase_of's order, read here: the rules' answers are this module's
        if any(has(name) for name in names):
            return phase
    return "other"


def classify_call(text: str, head: str) -> str:
    """The phase of one tool call from its text and head (module docstring, "Phase of a tool call")."""
    hits, sure = CALL_RULES.scan(text)
    return _classify(text, head, hits, sure, lambda name: PHASE_RULES[name].search(text))


def tool_calls(steps: Sequence[Step]) -> list[Call]:
    """Every tool call in order, with its text, phase and result (paired by ``call_id``, else the next result).

    Each call's text is scanned once (:data:`CALL_RULES`) and classified once; :func:`extract`, :func:`phases`
    and ``ingest.evidence.call_marks`` all read these calls, so pass the list to each of them.
    """
    collector = CallCollector()
    for step in steps:
        collector.add(step)
    return collector.calls


class CallCollector:
    """:func:`tool_calls` one step at a time (a trace read as a stream): :meth:`add` each step in order, then
    read :attr:`calls`.

    ``slim``: keep of each result only what :func:`extract` reads: a result whose output no output rule may
    match (:attr:`Call.output_scan`, computed when it is paired) of a call that is not an evaluation is kept
    without its output, so a long trace's tool outputs are not all held. The facts are the same.
    """

    def __init__(self, *, slim: bool = False) -> None:
        self.calls: list[Call] = []
        self.slim = slim
        self._open: dict[str, Call] = {}

    def add(self, step: Step) -> Call | None:
        """Take the next step; returns the :class:`Call` it starts (a ``tool_call``), else None."""
        calls = self.calls
        if step.kind == "tool_call":
            text, head, data = call_text(step.input or "")
            hits, sure = CALL_RULES.scan(text)
            call = Call(step, text, head, hits=hits, sure=sure, data=data)
            call.phase = _classify(text, head, hits, sure, call.search)
            calls.append(call)
            if step.call_id:
                self._open[step.call_id] = call
            return call
        if step.kind == "tool_result":
            match = self._open.pop(step.call_id, None) if step.call_id else None
            if match is None and calls and calls[-1].result is None and not (step.call_id and calls[-1].step.call_id):
                match = calls[-1]
            if match is not None and match.result is None:
                match.result = step
                if self.slim and match.phase != "evaluation" and not match.output_scan[0]:
                    match.result = Step(index=step.index, kind=step.kind, time=step.time, tool=_tool_name(step.tool))
                if match.settled:  # paired: its id is never read again
                    match.step.call_id = None
        return None


def _parse_score(output: str) -> tuple[float, str] | None:
    """The last score an evaluation output prints, as (fraction, the matched text), else None."""
    found = None
    for match in _SCORE.finditer(output):
        value = float(match[2])
        if match[3] or value > 1:
            if value > 100:
                continue
            value /= 100
        found = (value, match[0].strip())
    return found


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def extract(steps: Sequence[Step], *, calls: list[Call] | None = None) -> list[Facet]:
    """Every facet of a trace (rules in the module docstring), methods first, then measured facets.

    Args:
        steps: a parsed trace's steps (``ParsedTrace.steps``), ``steps[i].index == i`` not required.
        calls: ``tool_calls(steps)`` when the caller has it already (the ingest shares it with phases and
            evidence); computed otherwise.

    Returns:
        Facets in the order of METHOD_FACETS then MEASURED_FACETS; ``library``/``dataset`` one per name in order
        of first appearance; facets whose rule found nothing are absent. Raises nothing.
    """
    calls = tool_calls(steps) if calls is None else calls
    work = [c for c in calls if c.phase != "evaluation"]
    facets: list[Facet] = []

    methods: dict[str, list[tuple[int, str]]] = {}
    for call in work:
        for name in METHOD_RULES:
            if name not in call.hits or (name == "programmatic_data" and call.phase == "training"):
                continue
            match = call.first(name)
            if match is not None:
                methods.setdefault(name, []).append((call.step.index, match.strip()))
    training_calls = [c for c in work if c.phase == "training" and (c.has("trainer_code") or c.has("launch"))]
    if training_calls and "lora" not in methods and "qlora" not in methods:
        methods["full_finetune"] = [(c.step.index, "no LoRA/QLoRA in the training calls") for c in training_calls]
    for name in METHOD_FACETS:
        if name in methods:
            hits = methods[name]
            facets.append(Facet(name, hits[0][1], None, tuple(i for i, _ in hits)))

    for name in ("library", "dataset"):
        cited: dict[str, list[int]] = {}
        for call in work:
            if name == "library":
                found = [lib for lib, rule in _LIBRARY_NAMES if rule in call.hits and call.has(rule)]
            elif "dataset" in call.hits:
                found = [next(g for g in groups if g) or "" for groups in call.find_groups("dataset")]
                found = [d for d in found if d.lower() not in _DATASET_BUILDERS]
            else:
                continue
            for value in found:
                steps_of = cited.setdefault(value, [])
                if call.step.index not in steps_of:
                    steps_of.append(call.step.index)
        facets += [Facet(name, value, None, tuple(idx)) for value, idx in cited.items()]

    launches = [c.step.index for c in work if c.is_shell and c.has("launch")]
    if launches:
        facets.append(Facet("training_launches", str(len(launches)), float(len(launches)), tuple(launches)))

    best: tuple[int, int] | None = None  # (rl step, result step index)
    for call in calls:
        if call.phase != "training" or call.result is None:
            continue
        may, sure = call.output_scan
        if "reward" not in sure and ("reward" not in may or "reward" not in call.result.output.lower()):
            continue
        output = call.result.output
        numbers = [int(m[1]) for line in output.splitlines() if "reward" in line.lower()
                   for m in _STEP_ON_LINE.finditer(line)]
        numbers += [int(m[1]) for m in _PROGRESS.finditer(output)]
        if numbers and (best is None or max(numbers) > best[0]):
            best = (max(numbers), call.result.index)
    if best is not None:
        facets.append(Facet("rl_steps", str(best[0]), float(best[0]), (best[1],)))

    rollouts: tuple[int, int] | None = None
    for call in work:
        said: list[tuple[tuple[str | None, ...], int]] = [
            (groups, call.step.index) for groups in call.find_groups("rollouts")]
        if call.result is not None and "rollouts" in call.output_scan[0]:
            said += [(m.groups(), call.result.index) for m in _ROLLOUTS.finditer(call.result.output)]
        for groups, index in said:
            rollouts = (_int(next(g for g in groups if g)), index)
    if rollouts is not None:
        facets.append(Facet("rollouts_per_step", str(rollouts[0]), float(rollouts[0]), (rollouts[1],)))

    examples, cited_examples = 0, []
    for call in work:
        if call.result is None or "examples" not in call.output_scan[0]:
            continue
        counts = [_int(m[1]) for m in _EXAMPLES.finditer(call.result.output)]
        if counts:
            examples += sum(counts)
            cited_examples.append(call.result.index)
    if cited_examples:
        facets.append(Facet("examples_generated", str(examples), float(examples), tuple(cited_examples)))

    eval_runs = [c for c in calls if c.phase == "evaluation" and c.is_shell]
    if eval_runs:
        facets.append(Facet("evaluations", str(len(eval_runs)), float(len(eval_runs)),
                            tuple(c.step.index for c in eval_runs)))
    last_score: tuple[tuple[float, str], Call, Step] | None = None
    for call in eval_runs:
        score = _parse_score(call.result.output) if call.result is not None else None
        if score is not None and call.result is not None:
            last_score = (score, call, call.result)
    if last_score is not None:
        (fraction, text), call, result = last_score
        facets.append(Facet("self_score", text, fraction, (call.step.index, result.index)))
    return facets


def _filled_times(steps: Sequence[Step]) -> list[datetime | None]:
    times, last = [], None
    for step in steps:
        last = step.time or last
        times.append(last)
    return times


def phases(steps: Sequence[Step], *, idle_gap_s: float = IDLE_GAP_S, calls: list[Call] | None = None) -> list[Phase]:
    """The trace's time split into phases (module docstring, "Time"); [] when no step has a time. ``calls``:
    ``tool_calls(steps)`` when the caller has it already.

    Returns:
        Consecutive :class:`Phase` stretches from the first timed step to the last, in order; zero-length
        intervals are dropped, so the stretches' durations sum to the trace's span.
    """
    calls = tool_calls(steps) if calls is None else calls
    phase_by_index = {c.step.index: c.phase for c in calls}
    times = _filled_times(steps)
    start = next((t for t in times if t is not None), None)
    if start is None:
        return []
    position = {step.index: i for i, step in enumerate(steps)}
    # Calls reported only when they finished (OpenCode): the call's line time equals its result's.
    finished = {c.step.index for c in calls
                if c.result is not None and times[position[c.step.index]] == times[position[c.result.index]]}
    out: list[Phase] = []
    current = "other"
    for i in range(len(steps) - 1):
        step = steps[i]
        current = phase_by_index.get(step.index, current)
        t0, t1 = times[i], times[i + 1]
        if t0 is None or t1 is None or t1 <= t0:
            continue
        seconds = (t1 - t0).total_seconds()
        if steps[i + 1].index in finished:
            label = phase_by_index[steps[i + 1].index]
        elif seconds > idle_gap_s and step.kind != "tool_call":
            label = "idle"
        else:
            label = current
        begin, end = (t0 - start).total_seconds(), (t1 - start).total_seconds()
        if out and out[-1].phase == label and out[-1].end_s == begin:
            out[-1] = Phase(label, out[-1].start_s, end, out[-1].step_from, steps[i + 1].index)
        else:
            out.append(Phase(label, begin, end, step.index, steps[i + 1].index))
    return out
