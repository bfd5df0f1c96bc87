"""Suites are data: ``suites/<id>.json`` defines a benchmark family (benchmarks, base models with their
instruct counterparts, budget, hardware, scoring rule, weights, and the published files' mapping to agents).
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
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{path}:{exc.lineno}: {exc.msg}") from None


def suite_ids() -> list[str]:
    """Ids of every suite file, sorted."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.json"))
