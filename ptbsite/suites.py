"""Suites are data: ``suites/<id>.json`` defines a benchmark family (benchmarks, base models with their
instruct counterparts, budget, hardware, scoring rule, weights, the published files' mapping to agents, the
agents' exact method directories, and results reported elsewhere with their source).
Every app reads suites through this module; adding a benchmark or a base model needs no code change."""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

SUITES_DIR = Path(settings.BASE_DIR) / "suites"


class SuiteError(ValueError):
    """A suite file is missing or malformed; the message names the file."""


def load_suite(suite_id: str = "posttrainbench") -> dict:
    """The suite definition ``suites/<suite_id>.json`` as a dict.

    Raises:
        SuiteError: no such file, or not valid JSON (with the line).
    """
    path = SUITES_DIR / f"{suite_id}.json"
    if not path.exists():
        raise SuiteError(f"{path}: no such suite file")
    try:
        suite = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{path}:{exc.lineno}: {exc.msg}") from None
    _check_method_lists(suite, path)
    return suite


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


def suite_ids() -> list[str]:
    """Ids of every suite file, sorted."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.json"))
