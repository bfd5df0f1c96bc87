"""Re-running the judge on one run (PTB_JUDGE_COMMAND), as a job on a Celery worker, and storing its verdicts as
``rerun`` attempts.

On the worker (``run_judge_command``): the command is the worker's own PTB_JUDGE_COMMAND (never taken from a
message), a JSON list of argv run without a shell in a temporary copy of the run's ``task/`` directory (an empty
one if the run has none); ``{run_dir}`` may stand as a whole argument for the run's directory, ``{out_dir}`` for
the judge's output folder, also given as the environment variable PTB_JUDGE_OUTPUT_DIR. The output folder is
created empty for this run: the verdict files the judge writes there (``contamination_judgement.txt``,
``disallowed_model_judgement.txt``, ``judgement_<judge>.json``, ...) are this run's verdicts, whatever the task
copy or the run directory already holds; the worker sends their text back. On the server
(``store_judge_files``): the files are read like the results tree's (traces.verdicts) and every question they
answer is stored as a ``rerun`` verdict through traces.services.store_judge_rerun.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from traces import services as run_services
from ingest.redaction import Redactor
from traces.verdicts import Verdict, read_verdicts

PLACEHOLDER = "{run_dir}"
OUT_PLACEHOLDER = "{out_dir}"
OUTPUT_ENV = "PTB_JUDGE_OUTPUT_DIR"
_VERDICT_FILE = re.compile(r"^[A-Za-z0-9_]+\.(txt|json)$")
MAX_VERDICT_BYTES = 1 << 20


class JudgeNotConfigured(RuntimeError):
    """PTB_JUDGE_COMMAND is empty or malformed."""


class JudgeFailed(RuntimeError):
    """The judge command failed, timed out, was cancelled or wrote no verdict; the message says which."""


def judge_configured(command: object) -> bool:
    """Whether ``command`` (PTB_JUDGE_COMMAND) is a usable argv (the server offers "Re-run judge" then)."""
    try:
        judge_argv(Path("/run"), command)
    except JudgeNotConfigured:
        return False
    return True


def _judge_env() -> dict[str, str]:
    """The judge's environment: PATH, HOME, locale and PYTHON* variables plus PTB_JUDGE_ENV_* passed on
    without the prefix (e.g. PTB_JUDGE_ENV_OPENAI_API_KEY for an LLM judge); nothing else of the worker."""
    keep = {k: v for k, v in os.environ.items()
            if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR") or k.startswith("PYTHON")}
    keep.update({k.removeprefix("PTB_JUDGE_ENV_"): v for k, v in os.environ.items() if k.startswith("PTB_JUDGE_ENV_")})
    return keep


def judge_argv(run_dir: Path, command: object, out_dir: Path | None = None) -> list[str]:
    """``command`` with ``{run_dir}`` (and ``{out_dir}``, the output folder) replaced. Raises JudgeNotConfigured
    if it is empty, not a list of strings, or uses a placeholder inside an argument (it may only stand alone, so
    no quoting is needed)."""
    if not command:
        raise JudgeNotConfigured("no judge command is configured (set PTB_JUDGE_COMMAND to a JSON list of argv)")
    if not isinstance(command, list) or not all(isinstance(arg, str) for arg in command):
        raise JudgeNotConfigured("PTB_JUDGE_COMMAND must be a JSON list of strings")
    for placeholder in (PLACEHOLDER, OUT_PLACEHOLDER):
        if any(placeholder in arg and arg != placeholder for arg in command):
            raise JudgeNotConfigured(f"{placeholder} may only be a whole argument of PTB_JUDGE_COMMAND")
    values: dict[str, str] = {PLACEHOLDER: str(run_dir), OUT_PLACEHOLDER: str(out_dir or Path("/out"))}
    return [values[arg] if arg in values else str(arg) for arg in command]


def run_judge_command(run_dir: Path, *, command: object, work: Path, deadline: float,
                      should_cancel: Callable[[], bool]) -> dict[str, str]:
    """Run the judge on ``run_dir`` (worker side) in ``work``/task, a copy of its ``task/`` folder; return the
    verdict files it wrote into its output folder ``work``/out (created empty, ``{out_dir}`` and
    PTB_JUDGE_OUTPUT_DIR), name -> text (each at most 1 MiB). Files it leaves elsewhere are not its verdicts.

    The command runs in a process group of its own, killed on a cancel or at ``deadline`` (time.monotonic()).
    Raises JudgeNotConfigured; JudgeFailed (cannot start, non-zero exit with its redacted stderr tail,
    cancelled, timed out, or no verdict file written).
    """
    out = work / "out"
    out.mkdir(parents=True)
    argv = judge_argv(run_dir, command, out)
    task = work / "task"
    if (run_dir / "task").is_dir():
        shutil.copytree(run_dir / "task", task, symlinks=True)
    else:
        task.mkdir(parents=True)
    stderr_path = work / "judge-stderr.txt"
    try:
        with stderr_path.open("wb") as stderr:
            # The judge reads agent-written files: it gets no secret of the worker's environment.
            process = subprocess.Popen(argv, cwd=task, stdout=subprocess.DEVNULL, stderr=stderr, shell=False,
                                       env={**_judge_env(), OUTPUT_ENV: str(out)}, start_new_session=True)
    except OSError as exc:
        raise JudgeFailed(f"the judge command could not start: {exc}") from exc
    stopped = None
    while process.poll() is None:
        if should_cancel():
            stopped = "was cancelled"
        elif time.monotonic() > deadline:
            stopped = "timed out"
        if stopped:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise JudgeFailed(f"the judge command {stopped} and was killed")
        time.sleep(0.2)
    if process.returncode != 0:
        tail = Redactor.from_environ(os.environ).redact(stderr_path.read_text(errors="replace")[-2000:].strip())
        raise JudgeFailed(f"the judge command exited {process.returncode}: {tail}")
    written = {p.name: p.read_text(errors="replace")[:MAX_VERDICT_BYTES] for p in sorted(out.iterdir())
               if p.is_file() and not p.is_symlink() and _VERDICT_FILE.match(p.name)}
    if not written:
        raise JudgeFailed(f"the judge command wrote no verdict file (e.g. contamination_judgement.txt) into its "
                          f"output folder ({OUTPUT_ENV})")
    return written


def store_judge_files(*, run_id: str, files: dict[str, str], reviewer: str) -> list[Verdict]:
    """Read the verdict files a worker sent (name -> text) as the results tree's are read, store them as the run's
    ``rerun`` verdicts, and return them (server side).

    Raises ValueError for a file name that is not a plain verdict file name or text over 1 MiB, or when no file
    holds a verdict; traces.services.UnknownRun for an unknown run.
    """
    if not isinstance(files, dict) or not files:
        raise ValueError("a judge report must carry its verdict files")
    with tempfile.TemporaryDirectory(prefix="ptb-judge-") as tmp:
        for name, text in files.items():
            if not isinstance(name, str) or not _VERDICT_FILE.match(name) or not isinstance(text, str) \
                    or len(text.encode()) > MAX_VERDICT_BYTES:
                raise ValueError(f"{name!r} is not a verdict file")
            (Path(tmp) / name).write_text(text)
        verdicts = [v for v in read_verdicts(Path(tmp), Redactor.from_environ(os.environ).redact)
                    if v.source_file in files]
    if not verdicts:
        raise ValueError(f"no verdict in the judge's files ({', '.join(sorted(files))})")
    verdicts = [dataclasses.replace(v, attempt="rerun", note="; ".join(filter(None, [v.note, f"re-run by {reviewer}"])))
                for v in verdicts]
    run_services.store_judge_rerun(run_id=run_id, verdicts=verdicts)
    return verdicts
