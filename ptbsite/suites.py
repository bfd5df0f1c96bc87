"""Suites are data: ``suites/<id>.json`` defines a benchmark family (benchmarks with their evaluation settings, base
models with their instruct counterparts, budget, hardware, scoring rule, weights, the published files' mapping to
agents, the agents' exact method directories, and results reported elsewhere with their source).

Every app reads suites through this module: :func:`get_suite` returns the typed :class:`Suite`, :func:`load_suite`
the same file as a dict (validated by :class:`Suite` first). Adding a benchmark or a base model needs no code change.
Importable without Django settings (the evaluation worker reads benchmark settings from here).
"""
from __future__ import annotations

import json
import os
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SUITES_DIR = Path(__file__).resolve().parent.parent / "suites"


def default_suite_id() -> str:
    """The suite shown when a URL names none: settings.DEFAULT_SUITE (env ``PTB_DEFAULT_SUITE``), read from the
    environment when Django settings are not configured (a worker)."""
    from django.conf import settings

    if settings.configured:
        return settings.DEFAULT_SUITE
    return os.environ.get("PTB_DEFAULT_SUITE", "posttrainbench")


class SuiteError(ValueError):
    """A suite file is missing or malformed; the message names the file (and the field)."""


class _Model(BaseModel):
    # Suite files carry notes and sections only some apps read: kept, not rejected.
    model_config = ConfigDict(extra="allow", frozen=True)


class HfDatasetSpec(_Model):
    """A Hugging Face dataset as a task loads it: ``repo`` with ``name`` (config), ``data_dir``, ``revision``, and
    the ``splits`` read (the first one is scored)."""

    repo: str
    splits: list[str] = Field(min_length=1)
    name: str | None = None
    data_dir: str | None = None
    revision: str | None = None


class Evaluation(_Model):
    """How a benchmark's checkpoint is evaluated (the harness's evaluate.py of the task; evaluator.benchmarks
    documents each field). ``max_tokens``/``attempts``: the retry ladder's rungs (new tokens) and tries per rung."""

    inspect_task: str | None
    dataset: HfDatasetSpec | None = None
    dataset_note: str = ""
    max_tokens: list[int] = Field(min_length=3, max_length=3)
    max_connections: int = Field(ge=1)
    gpu_memory_utilization: float = Field(gt=0, le=1)
    local_scorer: Literal["match", "includes"]
    metric: str = "accuracy"
    stderr_metric: str | None = "stderr"
    log_realtime: bool | None = False
    judge: str | None = None
    attempts: list[int] = Field(default=[4, 3, 2], min_length=3, max_length=3)
    harness_limit: int | None = None
    notes: list[str] = []


class Benchmark(_Model):
    """One benchmark of a suite. ``weight``: given weight (fraction of the average), when the suite states it."""

    id: str
    name: str
    metric: str
    datasets: list[str] = []
    weight: float | None = None
    evaluation: Evaluation | None = None


class BaseModelSpec(_Model):
    """A base model the agents post-train, with its official instruct counterpart (Hugging Face ids)."""

    id: str
    hf_id: str
    name: str
    instruct_id: str
    instruct_hf_id: str


class Agent(_Model):
    """An agent with the exact method directory names of its runs (upstream's ``HARDCODED_AGENT_MAP``)."""

    key: str
    name: str
    scaffold: str | None = None
    reasoning_effort: str | None = None
    model_family: str | None = None
    methods: list[str] = []


class Suite(_Model):
    """A suite file. ``budget_hours``: hours per run; ``scoring_rule``: which checkpoint is scored."""

    id: str
    name: str
    description: str
    metric: str
    budget_hours: float
    hardware: str
    scoring_rule: Literal["final_model", "best_checkpoint"]
    benchmarks: list[Benchmark] = Field(min_length=1)
    base_models: list[BaseModelSpec] = Field(min_length=1)
    weights: dict[str, Any] = {}
    published: dict[str, Any] = {}
    reported: dict[str, Any] = {}
    agent_groups: list[Agent] = []

    def known_agents(self) -> list[Agent]:
        """The published agents (``published.agents``), then ``agent_groups`` (see :func:`known_agents`); validated
        once per Suite object (a suite file is read once per change, :func:`display_suite`), not once per call."""
        return list(self._known)

    @cached_property
    def _known(self) -> tuple[Agent, ...]:
        return tuple([Agent.model_validate(a) for a in self.published.get("agents", [])] + list(self.agent_groups))

    @cached_property
    def _by_method(self) -> dict[str, tuple[Agent, int | None]]:
        """{method dir: (the first known agent listing it, its 1-based seed or None for a single-method agent)}."""
        out: dict[str, tuple[Agent, int | None]] = {}
        for agent in self._known:
            for i, method in enumerate(agent.methods):
                out.setdefault(method, (agent, i + 1 if len(agent.methods) > 1 else None))
        return out

    def scaffolds(self) -> list[str]:
        """The scaffolds of the suite's known agents (``Claude Code``, ``Codex CLI``, ...), sorted; the plots give
        each its own family of colours in this order."""
        return sorted({a.scaffold for a in self.known_agents() if a.scaffold})

    def benchmark_name(self, benchmark_id: str) -> str:
        """The benchmark's display name (``Arena-Hard Writing`` for ``arenahardwriting``); the id when the suite
        does not name it."""
        return next((b.name for b in self.benchmarks if b.id == benchmark_id), benchmark_id)

    def base_model_name(self, base_model_id: str) -> str:
        """The base model's display name as the leaderboard shows it (the suite's ``name``: ``Qwen3-1.7B`` for
        ``Qwen3-1.7B-Base``), matched by id or Hugging Face id; the value itself when the suite does not list it."""
        for model in self.base_models:
            if base_model_id in (model.id, model.hf_id):
                return model.name
        return base_model_id

    def agent_name(self, method: str) -> str | None:
        """The display name of the agent whose ``methods`` list names the method directory ``method``, else None."""
        found = self._by_method.get(method)
        return found[0].name if found else None

    def agent_seed(self, method: str) -> int | None:
        """Which of its agent's repeated runs ``method`` is (1-based, the order of the agent's ``methods``), None
        when no agent lists it or the agent has a single method."""
        found = self._by_method.get(method)
        return found[1] if found else None

    def benchmark(self, benchmark_id: str) -> Benchmark:
        """The benchmark ``benchmark_id``; raises KeyError naming the known ids."""
        for bench in self.benchmarks:
            if bench.id == benchmark_id:
                return bench
        raise KeyError(f"unknown benchmark {benchmark_id!r}; known: {', '.join(b.id for b in self.benchmarks)}")


def _read(suite_id: str) -> tuple[Path, dict, Suite]:
    path = SUITES_DIR / f"{suite_id}.json"
    if not path.exists():
        raise SuiteError(f"{path}: no such suite file")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{path}:{exc.lineno}: {exc.msg}") from None
    try:
        suite = Suite.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise SuiteError(f"{path}: field {where}: {first['msg']}{more}") from None
    _check_method_lists(raw, path)
    return path, raw, suite


def get_suite(suite_id: str | None = None) -> Suite:
    """The typed suite ``suites/<suite_id>.json`` (default: the default suite).

    Raises:
        SuiteError: no such file, not valid JSON (with the line), or a field missing or of the wrong type (the
            message names the file and the field, e.g. ``benchmarks.2.metric``).
    """
    return _read(suite_id or default_suite_id())[2]


def load_suite(suite_id: str | None = None) -> dict:
    """The suite definition ``suites/<suite_id>.json`` as a dict, validated as :class:`Suite` first.

    Raises:
        SuiteError: as :func:`get_suite`.
    """
    return _read(suite_id or default_suite_id())[1]


def known_agents(suite: dict) -> list[dict]:
    """Every agent of a suite that names its method directories: the published agents (``published.agents``),
    then the groups the benchmark's own aggregation knows but the website does not show (``agent_groups``).

    Each is a dict with ``key``, ``name``, ``scaffold``, ``reasoning_effort``, ``model_family`` and ``methods``,
    the exact method directory names of its repeated runs (upstream's ``HARDCODED_AGENT_MAP``).
    """
    return [*suite.get("published", {}).get("agents", []), *suite.get("agent_groups", [])]


def _check_method_lists(suite: dict, path: Path) -> None:
    """Method lists hold exact directory names, each in one agent's list only.

    Raises:
        SuiteError: a pattern character (``*?[``) in a method name, or a method listed for two agents.
    """
    owner: dict[str, str] = {}
    for agent in known_agents(suite):
        for method in agent.get("methods", []):
            if any(c in method for c in "*?["):
                raise SuiteError(f"{path}: agent {agent['key']}: {method!r} is a pattern; list exact method names")
            if method in owner:
                raise SuiteError(f"{path}: method {method!r} is listed for both {owner[method]} and {agent['key']}")
            owner[method] = agent["key"]


@lru_cache(maxsize=16)
def _cached(suite_id: str, mtime_ns: int) -> Suite | None:
    try:
        return _read(suite_id)[2]
    except SuiteError:
        return None


def display_suite(suite_id: str | None = None) -> Suite | None:
    """The typed suite for display names (``benchmark_name``, ``base_model_name``, ``agent_name``), read once per
    change of the file; None when there is no such file or it is malformed (a page then shows ids)."""
    suite_id = suite_id or default_suite_id()
    path = SUITES_DIR / f"{suite_id}.json"
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return None
    return _cached(suite_id, mtime)


def suite_name(suite_id: str) -> str:
    """The suite's display name (``PostTrainBench``), the id when there is no such file."""
    suite = display_suite(suite_id)
    return suite.name if suite else suite_id


def suite_ids() -> list[str]:
    """Ids of every suite file, sorted."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.json"))
