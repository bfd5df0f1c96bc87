"""Names in a PostTrainBench results tree: method directories and run directories (spec section 1.1-1.2)."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ptbsite.query import ascii_int

HARNESS_AGENTS_FILE = Path(__file__).resolve().parent / "data" / "harness_agents.json"
_REST = re.compile(r"^(?P<config>.+?)_(?P<hours>\d+)h(?:_(?P<gpus>\d+)gpu)?(?P<experiment>(?:_.*)?)$")
# Directories of baseline evaluations (spec 1.4): ``baseline/``, ``baseline_zeroshot/``, ``baseline_fewshot/``...
# They are never agents; only BASELINE_FALLBACK_DIR supplies the base-model fallback scores (aggregate_final.py
# reads aggregated_baseline_zeroshot.csv, made from that directory).
BASELINE_PREFIX = "baseline"
BASELINE_FALLBACK_DIR = "baseline_zeroshot"


class LayoutError(ValueError):
    """A directory name that does not follow the results-tree naming rules."""


@dataclass(frozen=True)
class MethodName:
    """A parsed method directory name ``<agent>_<config_safe>_<hours>h[_<N>gpu]<experiment>``."""

    raw: str
    harness_agent: str
    config: str
    budget_hours: float
    gpus: int
    experiment: str
    scaffold: str
    reasoning_effort: str | None


@dataclass(frozen=True)
class RunName:
    """A parsed run directory name ``<task>_<model_safe>_<cluster_id>``."""

    raw: str
    benchmark: str
    model_safe: str
    cluster_id: int


@lru_cache(maxsize=1)
def harness_agents() -> dict[str, dict]:
    """The known harness agents (``traces/data/harness_agents.json``): name -> {scaffold, reasoning_effort}."""
    data = json.loads(HARNESS_AGENTS_FILE.read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def parse_method_name(name: str) -> MethodName:
    """Split a method directory name by the longest known agent prefix, then ``_<hours>h`` from the right.

    Example: ``claude_non_api_claude-opus-4-6_1m__10h_run1`` -> agent ``claude_non_api``, config
    ``claude-opus-4-6_1m_``, 10 hours, 1 GPU, experiment ``_run1``.

    Raises:
        LayoutError: no known agent prefix, or no ``_<hours>h`` part.
    """
    agents = harness_agents()
    for agent in sorted(agents, key=len, reverse=True):
        if name.startswith(agent + "_"):
            match = _REST.match(name[len(agent) + 1 :])
            if match:
                info = agents[agent]
                return MethodName(
                    raw=name, harness_agent=agent, config=match["config"], budget_hours=float(match["hours"]),
                    gpus=int(match["gpus"] or 1), experiment=match["experiment"], scaffold=info["scaffold"],
                    reasoning_effort=info.get("reasoning_effort"),
                )
    raise LayoutError(f"{name}: not a method directory (<agent>_<config>_<hours>h...; known agents in {HARNESS_AGENTS_FILE.name})")


def parse_run_name(name: str) -> RunName:
    """Split ``<task>_<model_safe>_<cluster_id>``: the id from the right, the task from the left (robust rule).

    Raises:
        LayoutError: fewer than three parts or a non-numeric cluster id.
    """
    head, _, cluster = name.rpartition("_")
    task, _, model_safe = head.partition("_")
    cluster_id = ascii_int(cluster)
    if cluster_id is None or not task or not model_safe:
        raise LayoutError(f"{name}: not a run directory (<task>_<model_safe>_<cluster_id>)")
    return RunName(raw=name, benchmark=task, model_safe=model_safe, cluster_id=cluster_id)


def run_id(method: str, run_dir: str) -> str:
    """The run's stable id: the first 16 hex characters of sha256("<method>/<run dir>")."""
    return hashlib.sha256(f"{method}/{run_dir}".encode()).hexdigest()[:16]


def model_safe(hf_id: str) -> str:
    """An HF id as it appears in run directory names: each of ``/ : [ ]`` replaced by ``_``."""
    return re.sub(r"[/:\[\]]", "_", hf_id)


def is_baseline_dir(name: str) -> bool:
    """Whether a directory under the results root holds baseline evaluations (``baseline*``), not an agent's runs."""
    return name.startswith(BASELINE_PREFIX)


def match_known_agent(method: str, known_agents: list[dict]) -> dict | None:
    """The known agent whose explicit ``methods`` list names this method directory, else None.

    Exact names only, as upstream's ``HARDCODED_AGENT_MAP`` (``scripts/constants.py`` on main,
    ``scripts/utils.py`` on qol_multigpu): a sweep that no list names (``claude_claude-opus-4-5_10h_v4``) is
    not one of the agent's seeds, however alike the names look.
    """
    for agent in known_agents:
        if method in agent.get("methods", []):
            return agent
    return None
