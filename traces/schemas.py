"""The typed models of the run record as pages and the API read it: one model per concept.

Selectors return these; the API serves them as they are (``response=`` the model); templates render their
attributes. Scores are fractions (0..1) in Python everywhere. The fields typed :data:`Percent` are served in
percent (x 100) when the model is serialized (the API's documented units, kept since issue 5); their Python value
stays a fraction, and templates show them with the ``percent`` filter.

Why the ingest's records differ: the parsers yield :class:`traces.steps.Step` and the facet rules
:class:`ingest.facets.Facet`, plain slotted dataclasses built hundreds of thousands of times per ingest (a
pydantic model validates every field on construction, several times slower); they are what ingest writes, and
:class:`Step` / :class:`Facet` here are what the warehouse gives back (with the stored extras: remaining time,
whole-text sizes, evidence rules). :class:`traces.verdicts.Verdict` is the one verdict model, written by the file
readers and read back by the selectors alike.
"""
from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from ptbsite.units import PercentOrNone

from .steps import StepKind
from .verdicts import FLAG_TEXT, Verdict, VerdictRule, kind_text

RunState = Literal["scored", "no_final_model", "eval_failed", "never_finished", "timed_out", "cuda_failure",
                   "api_limit"]
RUN_STATES: tuple[RunState, ...] = ("scored", "no_final_model", "eval_failed", "never_finished", "timed_out",
                                    "cuda_failure", "api_limit")
STATE_TEXT: dict[str, str] = {
    "scored": "scored", "no_final_model": "no final model", "eval_failed": "evaluation failed",
    "never_finished": "never finished", "timed_out": "timed out", "cuda_failure": "CUDA failure",
    "api_limit": "API limit",
}


# A fraction in Python, percent (x 100) once serialized (the API's unit for scores).
Percent = PercentOrNone


class Model(BaseModel):
    """Base of the read models: built from attributes too (ninja's ``response=``), extra keys refused."""

    model_config = ConfigDict(from_attributes=True, extra="forbid")


class Run(Model):
    """One run as listed and as its page heads it.

    ``score``: the newest evaluation that is not an exploratory rerun (fraction; percent in JSON), None when not
    scored; ``accuracy``: ingest's score from the results tree (fraction). ``time_taken_s`` seconds,
    ``budget_hours`` hours; tokens and ``cost_usd`` (US dollars) as the trace reports them. ``overrides``: a
    reviewer's latest verdict per kind (True = flagged); ``flags``: the effective flag per scored kind after
    overrides (``flagged``, ``judge_error`` or None; empty for baselines). Times are UTC: ``started_at`` /
    ``ended_at`` the trace's first and last timestamps, ``dir_time`` the run directory's time (its
    ``timestamp.txt``, else its files' earliest modification time; ``dir_time_source`` says which),
    ``ingested_at`` when the site stored the run; ``run_date`` is the run's own date (:attr:`run_date`).
    """

    id: str
    method: str
    run_dir: str
    suite: str
    benchmark: str
    base_model: str
    base_model_hf: str
    cluster_id: int
    is_latest: bool
    state: RunState
    state_detail: str
    time_taken_s: int | None
    budget_hours: float
    accuracy: float | None
    has_final_model: bool
    eval_attempts: int
    trace_file: str | None
    trace_format: str | None
    trace_bytes: int
    step_count: int
    started_at: datetime | None
    ended_at: datetime | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    trace_model: str | None
    synthetic: bool
    ingested_at: datetime | None = Field(None, description="UTC, when the site ingested the run (not the run's date)")
    dir_time: datetime | None = Field(None, description="UTC, the run directory's time (dir_time_source says which)")
    dir_time_source: Literal["timestamp.txt", "file times"] | None = Field(
        None, description="timestamp.txt (the harness's stamp) or file times (the earliest file modification time)")
    agent: str = ""
    agent_key: str = ""
    scaffold: str = ""
    score: Percent = Field(None, description="percent (the newest successful evaluation), null when not scored")
    verdicts: list[Verdict] = Field(default_factory=list)
    overrides: dict[str, bool] = Field(default_factory=dict)
    flags: dict[str, str | None] = Field(default_factory=dict)
    agent_display: str = Field("", description="the agent's display name from the suite file (else ``agent``)")
    benchmark_name: str = Field("", description="the benchmark's display name from the suite file")
    base_model_name: str = Field("", description="the base model's display name from the suite file")
    suite_name: str = Field("", description="the suite's display name")
    seed: int | None = Field(None, description="which of the agent's repeated runs this is (1-based), if known")
    verdict_rule: VerdictRule | None = Field(None, description="how the run's era combines its judges' verdicts "
                                                               "(traces.verdicts.RULES); None for baselines")
    verdict_labels: dict[str, str] = Field(
        default_factory=dict, description="per question of ``flags``: flagged | judge_error | clean | not_assessed")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def title(self) -> str:
        """"<agent> on <benchmark> with <base model> (seed n, older attempt)" in display names."""
        detail = [f"seed {self.seed}"] if self.seed else []
        if not self.is_latest:
            detail.append("older attempt")
        return (f"{self.agent_display or self.agent or self.method} on {self.benchmark_name or self.benchmark} "
                f"with {self.base_model_name or self.base_model}" + (f" ({', '.join(detail)})" if detail else ""))

    @computed_field(description="UTC, the run's own date: the trace's first timestamp, else the run directory's "  # type: ignore[prop-decorator]
                                "time; null when neither is known")
    @property
    def run_date(self) -> datetime | None:
        """When the run ran: ``started_at`` (the trace's first timestamp), else ``dir_time``; never the ingest
        time."""
        return self.started_at or self.dir_time

    @computed_field(description="where run_date comes from: trace, timestamp.txt or file times")  # type: ignore[prop-decorator]
    @property
    def run_date_source(self) -> str | None:
        """``trace``, ``timestamp.txt`` or ``file times`` (:attr:`run_date`), None without a date."""
        return "trace" if self.started_at else self.dir_time_source if self.dir_time else None

    @property
    def run_date_note(self) -> str:
        """Where the date comes from, in words, for a page's hover text."""
        return {"trace": "the trace's first timestamp", "timestamp.txt": "the run directory's timestamp.txt",
                "file times": "the run directory's file times: the first file the harness wrote"}.get(
                    self.run_date_source or "", "no date in the trace or the run directory")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict_text(self) -> dict[str, str]:
        """Per question of ``verdict_labels``, in words: ``{"disallowed_model": "Disallowed model: flagged"}``."""
        return {kind: f"{kind_text(kind)}: {FLAG_TEXT.get(label, label)}" for kind, label in self.verdict_labels.items()}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def state_text(self) -> str:
        """The state in words (STATE_TEXT)."""
        return STATE_TEXT.get(self.state, self.state)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def flagged(self) -> bool:
        """A judge (after overrides) flagged contamination or a disallowed model."""
        return any(v == "flagged" for v in self.flags.values())

    @property
    def judge_error(self) -> bool:
        """A scored verdict is missing or malformed (the run falls back to its base model too)."""
        return any(v == "judge_error" for v in self.flags.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def budget_fraction(self) -> float | None:
        """Agent time as a fraction of the budget (0..1+), None without time_taken.txt."""
        if self.time_taken_s is None or not self.budget_hours:
            return None
        return self.time_taken_s / (self.budget_hours * 3600)


def _not_shown(shown: str | None, total: int | None) -> int:
    if shown is None or total is None:
        return 0
    return max(0, total - len(shown.encode("utf-8", "surrogatepass")))


class Step(Model):
    """One stored step of a trace. ``elapsed_s``/``remaining_s`` in seconds (remaining from the run's budget).

    ``input``/``output`` hold what the page shows (cut to what the page size allows); ``input_bytes``/
    ``output_bytes`` are the UTF-8 sizes of the whole texts and ``*_not_shown`` the bytes left out, served whole
    by ``/api/runs/{run_id}/steps/{index}/text``. ``call_id`` pairs a tool call with its result; ``label`` names a
    typed event (rate limit, api retry, task started, compaction summary, ...); ``suspicious``: the evidence
    rules that marked the step.
    """

    index: int
    time: datetime | None = None
    elapsed_s: float | None = None
    remaining_s: float | None = None
    kind: StepKind
    label: str | None = None
    tool: str | None = None
    call_id: str | None = None
    input: str | None = None
    output: str = ""
    input_bytes: int | None = None
    output_bytes: int | None = None
    is_error: bool = False
    tokens_in: int | None = Field(None, exclude=True)
    tokens_out: int | None = Field(None, exclude=True)
    line: int | None = Field(None, exclude=True)
    suspicious: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def input_not_shown(self) -> int:
        """Bytes (UTF-8) of the whole input that ``input`` leaves out."""
        return _not_shown(self.input, self.input_bytes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def output_not_shown(self) -> int:
        """Bytes (UTF-8) of the whole output that ``output`` leaves out."""
        return _not_shown(self.output, self.output_bytes)


class StepPage(Model):
    """One page of a trace: ``next`` is the ``after`` cursor of the next page (None on the last), ``total`` the
    steps matching the filters; ``capped``: a filtered count stopped at ``traces.selectors.steps.MATCH_COUNT_CAP``
    (``total`` is then that cap: there are more)."""

    steps: list[Step]
    next: int | None
    total: int
    capped: bool = False


class EvidenceStep(Model):
    """A step an evidence rule marked: its index, the rules (``suspicious``), its input cut to 1,000 characters."""

    index: int
    rules: list[str]
    input: str | None


def _as_int(value: object) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def _as_float(value: object) -> float | None:
    try:
        return float(value) if value is not None and not isinstance(value, bool) else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _as_text(value: object, limit: int = 80) -> str | None:
    return str(value)[:limit] if value not in (None, "") else None


class HowRun(Model):
    """A rerun's public "how it was run": what a reader needs to judge the number, nothing of the server (no path,
    host, pid or command line; the whole provenance is on staff pages only). Read from the provenance the worker
    reported and the server added (evaluator.worker, evaluator.services._store_success).

    ``harness_commit``: the PostTrainBench revision the evaluation follows; ``inspect_ai``/``inspect_evals``:
    versions on the worker; ``provider``: ``hf`` or ``vllm``; ``dataset``: the benchmark's dataset as the harness
    names it, or for a local copy only its folder's name with ``local_dataset`` true; ``dataset_size``: samples
    in the test set, ``samples``: samples evaluated (fewer with a limit); ``max_tokens``: the new-token limit of
    the attempt that scored; ``started`` UTC; ``seconds``: wall time of the whole evaluation."""

    harness_commit: str | None
    inspect_ai: str | None
    inspect_evals: str | None
    provider: str | None
    dataset: str | None
    local_dataset: bool
    dataset_size: int | None
    samples: int | None
    max_tokens: int | None
    started: datetime | None
    seconds: float | None

    @classmethod
    def from_provenance(cls, provenance: dict) -> HowRun:
        """The summary of a stored provenance dict (any missing or malformed field: None)."""
        def part(parent: dict, key: str) -> dict:
            value = parent.get(key)
            return value if isinstance(value, dict) else {}

        settings, versions = part(provenance, "settings"), part(provenance, "versions")
        harness = part(versions, "harness")
        dataset = _as_text(settings.get("dataset"), 400)
        local = bool(dataset and (dataset.startswith(("/", "\\", "~")) or dataset[1:3] in (":/", ":\\")))
        if local and dataset:  # an absolute path on the worker (runner.evaluate_checkpoint): only its last name
            dataset = dataset.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or None
        try:
            started = datetime.fromisoformat(str(provenance.get("started"))) if provenance.get("started") else None
        except ValueError:
            started = None
        return cls(
            harness_commit=_as_text(harness.get("commit"), 40), local_dataset=local, dataset=_as_text(dataset),
            inspect_ai=_as_text(provenance.get("log_inspect_ai") or provenance.get("inspect_ai")
                                or versions.get("inspect_ai"), 40),
            inspect_evals=_as_text(versions.get("inspect_evals"), 40), provider=_as_text(provenance.get("provider"), 20),
            dataset_size=_as_int(provenance.get("samples_total")), samples=_as_int(provenance.get("samples")),
            max_tokens=_as_int(settings.get("max_tokens")), started=started, seconds=_as_float(provenance.get("seconds")),
        )


class Evaluation(Model):
    """One scoring of the run's checkpoint (the original or a rerun). ``origin``: ``original``, ``rerun`` (on the
    benchmark's own dataset, all of its samples: it can become the score) or ``rerun-exploratory`` /
    ``rerun-partial`` (on a sample or another dataset: shown, never the score; the provenance's ``exploratory``
    says why). ``score``: fraction (percent in JSON); ``counts``: this is the run's score (the newest that is not
    exploratory); ``created_at`` UTC; ``how_run``: a rerun's public summary (:class:`HowRun`). ``provenance``
    (the worker's whole report: paths, host, pids) is never serialised: staff pages show it."""

    id: str
    origin: str
    counts: bool
    score: Percent = Field(description="percent (0-100)")
    metrics: dict = Field(default_factory=dict)
    provenance: dict = Field(exclude=True)
    created_at: datetime

    @computed_field  # type: ignore[prop-decorator]
    @property
    def how_run(self) -> HowRun | None:
        return HowRun.from_provenance(self.provenance) if self.origin != "original" and self.provenance else None


class Facet(Model):
    """One stored facet of a run (rules in ``ingest/facets.py``): ``value_num`` a count, a step number or a
    fraction (``self_score``), None for presence facets; ``steps``: the agent-trace step indices it cites."""

    facet: str
    value: str
    value_num: float | None
    steps: list[int]


class CitedStep(Model):
    """A step of the agent's trace a judge's words name: ``index`` the step, ``via`` how the text names it
    (``step 12``, or a tool call id such as ``toolu_01...``)."""

    index: int
    via: str


class JudgeVerdict(Model):
    """One verdict as the judge panel shows it: the verdict (``kind``/``kind_text``, ``value``/``value_text``,
    judge, attempt, era), the judge's own words (``text``: the verdict file's content or justification, whole;
    ``source_file`` its file in the run directory), ``reasoning``: the judge's messages from its own trace
    (``reasoning_trace``; None when that judge left no trace; at most REASONING_SHOWN characters, ``reasoning_cut``
    true when longer), and ``cited``: the agent-trace steps the text or the reasoning names (none on a row that
    ``combines`` other judges' words: each judge's row cites them)."""

    kind: str
    kind_text: str
    judge: str
    attempt: str
    era: str
    value: str
    value_text: str
    text: str
    note: str | None
    source_file: str | None
    reasoning: str | None = None
    reasoning_trace: str | None = None
    reasoning_cut: bool = False
    cited: list[CitedStep] = Field(default_factory=list)
    counts: bool = Field(False, description="the run's era rule reads this verdict (``Run.verdict_rule``)")
    origin: str = Field("", description="where the verdict comes from, in words (a file of the run directory, "
                                        "or the judge re-run job's output)")
    combines: bool = Field(False, description="judge_result.json's justification is the judges' own words above, "
                                              "concatenated: the page does not print them twice")
    reasoning_under: str | None = Field(None, description="this judge's reasoning is shown once, under that "
                                                          "question (``kind``), not again here")


class JudgeQuestion(Model):
    """One question of the judge panel (``kind``) with the flag that counts after the era's rule and any
    reviewer's override (``label``: flagged | judge_error | clean | not_assessed), the rule in words, and
    each judge's answer (``verdicts``: the verdicts the rule reads first, then the others)."""

    kind: str
    kind_text: str
    label: str
    rule: str
    overridden: bool = False
    verdicts: list[JudgeVerdict] = Field(default_factory=list, exclude=True)  # JSON: the run's judge_panel, by kind
    contested: list[str] = Field(default_factory=list, description="the claims of the public's challenges staff "
                                                                   "accepted on this question (contested)")


class OverrideEntry(Model):
    """One reviewer override in the audit log: ``previous`` (flagged | clean | judge_error, None on rows older
    than the column), ``flagged`` the new verdict (``new`` in words), ``created_at`` naive UTC."""

    kind: str
    previous: str | None
    flagged: bool
    new: str
    reason: str
    reviewer: str
    created_at: datetime


class RunTexts(Model):
    """The run's long texts and what ingest did to its files: ``prompt`` (cut; ``prompt_not_shown``: characters
    left out), ``metrics`` (None when absent or too long to show), ``problems`` (the first ones; ``problem_count``
    all), ``redaction_warnings``, ``secrets_redacted`` and ``chars_replaced`` (None for runs stored before they
    were counted), ``trace_incomplete`` (why the agent trace is incomplete, else None), ``unknown_events``."""

    prompt: str | None = None
    prompt_not_shown: int = 0
    metrics: dict | None = None
    problems: list[str] = Field(default_factory=list)
    problem_count: int = 0
    redaction_warnings: list[str] = Field(default_factory=list)
    secrets_redacted: int | None = None
    chars_replaced: int | None = None
    trace_incomplete: str | None = None
    unknown_events: dict[str, int] = Field(default_factory=dict)


__all__ = ["RunState", "RUN_STATES", "STATE_TEXT", "Percent", "Run", "Step", "StepPage", "EvidenceStep",
           "Evaluation", "Facet", "CitedStep", "JudgeVerdict", "OverrideEntry", "RunTexts", "Verdict"]
