"""Re-running the judge on one run (PTB_JUDGE_COMMAND) and storing its verdicts as ``rerun`` attempts.

The command is a JSON list of argv run without a shell, in a temporary copy of the run's ``task/`` directory
(an empty one if the run has none); ``{run_dir}`` may stand as a whole argument for the run's directory. It
writes the one-line verdict files (``contamination_judgement.txt``, ``disallowed_model_judgement.txt``, ...)
into its working directory; they are read like the results tree's (traces.verdicts) and stored through
traces.services.store_judge_rerun. It runs in the web process, bounded by PTB_JUDGE_TIMEOUT_SECONDS.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from django.conf import settings

from traces import selectors as run_selectors
from traces import services as run_services
from traces.redaction import Redactor
from traces.verdicts import Verdict, read_verdicts

PLACEHOLDER = "{run_dir}"


class JudgeNotConfigured(RuntimeError):
    """PTB_JUDGE_COMMAND is empty or malformed."""


class JudgeFailed(RuntimeError):
    """The judge command failed, timed out or wrote no verdict; the message says which."""


def _judge_env() -> dict[str, str]:
    """The judge's environment: PATH, HOME, locale and PYTHON* variables plus PTB_JUDGE_ENV_* passed on
    without the prefix (e.g. PTB_JUDGE_ENV_OPENAI_API_KEY for an LLM judge); nothing else of the web process."""
    keep = {k: v for k, v in os.environ.items()
            if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR") or k.startswith("PYTHON")}
    keep.update({k.removeprefix("PTB_JUDGE_ENV_"): v for k, v in os.environ.items() if k.startswith("PTB_JUDGE_ENV_")})
    return keep



def judge_argv(run_dir: Path) -> list[str]:
    """PTB_JUDGE_COMMAND with ``{run_dir}`` replaced. Raises JudgeNotConfigured if it is empty, not a list of
    strings, or uses the placeholder inside an argument (it may only stand alone, so no quoting is needed)."""
    command = settings.PTB_JUDGE_COMMAND
    if not command:
        raise JudgeNotConfigured("no judge command is configured (set PTB_JUDGE_COMMAND to a JSON list of argv)")
    if not isinstance(command, list) or not all(isinstance(arg, str) for arg in command):
        raise JudgeNotConfigured("PTB_JUDGE_COMMAND must be a JSON list of strings")
    if any(PLACEHOLDER in arg and arg != PLACEHOLDER for arg in command):
        raise JudgeNotConfigured(f"{PLACEHOLDER} may only be a whole argument of PTB_JUDGE_COMMAND")
    return [str(run_dir) if arg == PLACEHOLDER else arg for arg in command]


def rerun_judge(*, run_id: str, reviewer: str) -> list[Verdict]:
    """Run the judge command on a run and store its verdicts (attempt ``rerun``); return them.

    Raises:
        JudgeNotConfigured; traces.services.UnknownRun; JudgeFailed (non-zero exit with its stderr tail, timeout,
        or no verdict file written).
    """
    run_dir = run_selectors.run_directory(run_id)
    if run_dir is None:
        raise run_services.UnknownRun(f"no run {run_id}")
    argv = judge_argv(run_dir)
    with tempfile.TemporaryDirectory(prefix="ptb-judge-") as tmp:
        work = Path(tmp) / "task"
        if (run_dir / "task").is_dir():
            shutil.copytree(run_dir / "task", work, symlinks=True)
        else:
            work.mkdir()
        before = {p.name for p in work.iterdir()}
        try:
            # The judge reads agent-written files: it gets no secret of the web process's environment.
            done = subprocess.run(argv, cwd=work, capture_output=True, text=True, shell=False, env=_judge_env(),
                                  timeout=settings.PTB_JUDGE_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired as exc:
            raise JudgeFailed(f"the judge command timed out after {exc.timeout} s") from exc
        except OSError as exc:
            raise JudgeFailed(f"the judge command could not start: {exc}") from exc
        if done.returncode != 0:
            tail = Redactor.from_environ(os.environ).redact(done.stderr[-2000:].strip())
            raise JudgeFailed(f"the judge command exited {done.returncode}: {tail}")
        written = [v for v in read_verdicts(work, Redactor.from_environ(os.environ).redact)
                   if v.source_file and v.source_file not in before]
    if not written:
        raise JudgeFailed("the judge command wrote no verdict file (e.g. contamination_judgement.txt)")
    verdicts = [dataclasses.replace(v, attempt="rerun", note="; ".join(filter(None, [v.note, f"re-run by {reviewer}"])))
                for v in written]
    run_services.store_judge_rerun(run_id=run_id, verdicts=verdicts)
    return verdicts
