"""Walking a results tree (spec section 1) and storing each of its runs, each in its own transaction."""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ptbsite import warehouse

from .. import layout
from ..redaction import Redactor
from ..services import refresh_agent, store_run
from .reader import Ingester, RunIngestError, content_hash

log = logging.getLogger(__name__)

SYNTHETIC_MARKER = "SYNTHETIC"  # a file at the results root that marks a generated (demo) tree


@dataclass
class IngestReport:
    """What one ``ingest_tree`` call did. ``problems`` are "path: message" strings; nothing in them is fatal."""

    root: str
    stored: int = 0
    unchanged: int = 0
    failed: int = 0
    steps: int = 0
    bytes_read: int = 0
    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (f"{self.root}: {self.stored} runs stored, {self.unchanged} unchanged, {self.failed} failed, "
                f"{self.steps} steps, {self.bytes_read / 1e6:.1f} MB of traces, {len(self.problems)} problems")



@warehouse.retrying
def _stored_hashes(method: str) -> dict[str, str]:
    with warehouse.connect() as con:
        return dict(con.execute("SELECT run_dir, content_hash FROM runs WHERE method = ?", [method]).fetchall())


def ingest_tree(
    *,
    root: Path,
    suite_id: str = "posttrainbench",
    synthetic: bool | None = None,
    redactor: Redactor | None = None,
    progress: Callable[[str], None] | None = None,
) -> IngestReport:
    """Ingest every method and run under ``root`` (spec section 1); return what happened.

    Method dirs are ``<agent>_<config>_<hours>h...`` (directories starting with ``_`` are skipped);
    ``baseline*/`` dirs hold baseline evaluations. A run whose files did not change since the last ingest
    (same content hash) is skipped, so re-ingesting a tree adds nothing. A run that fails to parse or store is
    reported with its directory and the ingest goes on with the next one.

    Args:
        synthetic: label the runs as synthetic (generated demo data); default: whether ``root/SYNTHETIC`` exists.
        redactor: secret redaction; default: ``Redactor.from_environ(os.environ)`` (the usual key variables).
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    report = IngestReport(root=str(root))
    ingester = Ingester(
        suite_id=suite_id,
        redactor=redactor or Redactor.from_environ(os.environ),
        synthetic=(root / SYNTHETIC_MARKER).exists() if synthetic is None else synthetic,
    )
    # One open warehouse for the whole tree: a plain file is not reopened and checkpointed for every run.
    with warehouse.hold_open():
        for method_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
            baseline = layout.is_baseline_dir(method_dir.name)
            if baseline:
                method = layout.MethodName(method_dir.name, "baseline", "", 0.0, 1, "", "none", None)
                method_row = (method.raw, suite_id, "baseline", "", 0.0, 1, "", "none", "baseline",
                              "Baseline evaluations", None, ingester.synthetic, str(root),
                              datetime.now(timezone.utc).replace(tzinfo=None))
            else:
                try:
                    method = layout.parse_method_name(method_dir.name)
                except layout.LayoutError as exc:
                    report.problems.append(f"{method_dir}: {exc}")
                    continue
                method_row = ingester.method_row(method, root)
            known = _stored_hashes(method.raw)
            if known:
                refresh_agent(method_row)
            for run_dir in sorted(p for p in method_dir.iterdir() if p.is_dir()):
                try:
                    if known.get(run_dir.name) == content_hash(run_dir):
                        report.unchanged += 1
                        continue
                    rows = ingester.parse_run(method, run_dir, baseline=baseline)
                    store_run(rows, method_row=method_row)
                except (layout.LayoutError, RunIngestError) as exc:
                    report.failed += 1
                    report.problems.append(str(exc) if str(run_dir) in str(exc) else f"{run_dir}: {exc}")
                    continue
                except Exception as exc:  # noqa: BLE001 - one broken run must not stop the tree
                    report.failed += 1
                    report.problems.append(f"{run_dir}: not stored: {type(exc).__name__}: {exc}")
                    log.exception("ingest of %s failed", run_dir)
                    continue
                report.stored += 1
                report.steps += len(rows["steps"])
                report.bytes_read += rows["run"]["trace_bytes"]
                report.problems += rows["problems"]
                if progress:
                    progress(f"{method_dir.name}/{run_dir.name}: {rows['run']['state']}, {rows['run']['step_count']} steps")
    return report

