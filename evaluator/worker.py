"""What a GPU (or CPU) worker does with one job: evaluate a checkpoint or re-run the judge, report progress,
hand the result back.

Everything about the job comes from the task message (evaluator.protocol.JobMessage); everything goes back over
HTTP to the web server's worker API (``/api/worker/jobs/<id>/...``, the requests and answers of evaluator.protocol,
validated on both ends) with two credentials: the worker token
(``Authorization: Bearer <PTB_WORKER_TOKEN>``, from the worker's own settings, never in a message) and the job's
credential from the message (``X-PTB-Job-Credential``, signed by the server for this job, time-limited). The
worker never opens the web server's databases, so it can run on any machine that sees the checkpoints.

A heartbeat thread posts progress every ``heartbeat_s`` seconds (and at once after each finished sample); its
answer carries the job's status, so a cancel (or a job the server has already ended) stops the evaluation
before its next sample. ``timeout_s`` of wall time kills it, as a failure.
"""
from __future__ import annotations

import logging
import socket
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from .protocol import FinishAnswer, FinishReport, JobMessage, ProgressAnswer, ProgressReport, StartAnswer, StartRequest

log = logging.getLogger(__name__)
Answer = TypeVar("Answer", bound=BaseModel)
CREDENTIAL_HEADER = "X-PTB-Job-Credential"


class JobClient:
    """The worker API of one job. Calls raise httpx.HTTPError on transport errors and non-2xx answers, and
    pydantic.ValidationError on an answer that is not the protocol's."""

    def __init__(self, *, api_base: str, token: str, credential: str, job_id: int, timeout_s: float = 30.0) -> None:
        self.prefix = f"/api/worker/jobs/{job_id}"
        self.http = httpx.Client(base_url=api_base.rstrip("/"), timeout=timeout_s,
                                 headers={"Authorization": f"Bearer {token}", CREDENTIAL_HEADER: credential})

    def _post(self, path: str, answer: type[Answer], **kwargs: Any) -> Answer:
        response = self.http.post(self.prefix + path, **kwargs)
        response.raise_for_status()
        return answer.model_validate_json(response.content)

    def _post_retrying(self, path: str, answer: type[Answer], *, attempts: int = 5, backoff_s: float = 1.0,
                       **kwargs: Any) -> Answer:
        """``_post`` retrying transport errors (server restarting, network blip) and server errors (5xx: a proxy's
        502/503 while the server restarts, or a server fault) with backoff ``backoff_s`` x 1, 2, 4, 8 s; a 4xx is
        the server refusing the request and is raised at once."""
        for attempt in range(attempts):
            try:
                return self._post(path, answer, **kwargs)
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code < 500 or attempt == attempts - 1:
                    raise
            except httpx.TransportError:
                if attempt == attempts - 1:
                    raise
            time.sleep(backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")

    def start(self, host: str) -> StartAnswer:
        """Say the job was received; the answer says whether to do it. Retries transport errors."""
        return self._post_retrying("/start", StartAnswer, json=StartRequest(host=host).model_dump(mode="json"))

    def progress(self, done: int | None, total: int | None, lines: list[str]) -> ProgressAnswer:
        """A heartbeat; the answer carries the job's status and whether a cancel is pending."""
        report = ProgressReport(samples_done=done, samples_total=total, log=lines)
        return self._post("/progress", ProgressAnswer, json=report.model_dump(mode="json"))

    def finish(self, report: FinishReport, eval_log: Path | None, *, backoff_s: float = 1.0) -> FinishAnswer:
        """Send the final report (JSON in the ``report`` form field, beside the .eval log, multipart), retrying
        transport and server errors. When the server still answers an error (a 5xx after every retry, or a 4xx),
        a failure naming that answer is sent in its place, so the job page says why the results were not stored
        instead of the staleness rule's "worker lost" two minutes later; that report's own error is raised."""
        data = {"report": report.model_dump_json()}
        files = None
        if eval_log is not None:  # read once: a retry must send the whole file again
            files = {"eval_log": (eval_log.name, eval_log.read_bytes(), "application/zip")}
        try:
            return self._post_retrying("/finish", FinishAnswer, backoff_s=backoff_s, data=data, files=files)
        except httpx.HTTPStatusError as exc:
            answer = exc.response
            log.error("job report refused: HTTP %s %s", answer.status_code, answer.text[:500])
            failed = FinishReport(status="failed", log=report.log,
                                  reason=f"the server refused the worker's {report.status} report: HTTP "
                                         f"{answer.status_code} {answer.text[:300]}")
            return self._post_retrying("/finish", FinishAnswer, backoff_s=backoff_s,
                                       data={"report": failed.model_dump_json()})

    def close(self) -> None:
        self.http.close()


class _Heartbeat(threading.Thread):
    """Posts progress and log lines; learns from the answers whether to stop."""

    def __init__(self, client: JobClient, *, every_s: float) -> None:
        super().__init__(daemon=True, name="ptb-heartbeat")
        self.client, self.every_s = client, every_s
        self.done: int | None = None
        self.total: int | None = None
        self.lines: list[str] = []
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.stopped = threading.Event()
        self.cancel = False

    def say(self, line: str) -> None:
        log.info("%s", line)
        with self.lock:
            # when it happened, in UTC like the server's own lines (the server adds no second time to it)
            self.lines.append(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M:%S} [worker] {line}")
        self.wake.set()

    def on_progress(self, done: int, total: int) -> None:
        """The runner's callback: record only; the thread posts."""
        self.done, self.total = done, total
        self.wake.set()

    def should_cancel(self) -> bool:
        return self.cancel

    def run(self) -> None:
        while not self.stopped.is_set():
            self.wake.wait(self.every_s)
            self.wake.clear()
            self.beat()

    def beat(self) -> None:
        with self.lock:
            lines, self.lines = self.lines, []
        try:
            answer = self.client.progress(self.done, self.total, lines)
        except (httpx.HTTPError, ValueError) as exc:
            # the server may be restarting (an HTTP error, or a page that is not the answer's JSON: ValueError, as
            # pydantic's ValidationError is one); the thread lives on and the next beat tries again
            log.warning("heartbeat failed: %s", exc)
            with self.lock:
                self.lines[:0] = lines
            return
        if answer.cancel_requested or answer.status != "running":
            self.cancel = True

    def stop(self) -> list[str]:
        """Stop beating; return the log lines not yet sent."""
        self.stopped.set()
        self.wake.set()
        self.join(timeout=self.every_s + 35)
        with self.lock:
            lines, self.lines = self.lines, []
        return lines


def run_job(message: JobMessage) -> str:
    """Do the job described by ``message`` and report back; returns the final status (for Celery's log).

    Raises httpx.HTTPError only when the server cannot be reached (or refuses the credentials) for the start
    or final report; the job then ends on the server by its staleness rule.
    """
    from django.conf import settings

    client = JobClient(api_base=message.api_base, token=settings.PTB_WORKER_TOKEN,
                       credential=message.credential, job_id=message.job_id)
    host = socket.gethostname()
    try:
        answer = client.start(host)
        if not answer.proceed:
            return f"skipped: {answer.reason}"
        beat = _Heartbeat(client, every_s=message.heartbeat_s)
        beat.start()
        deadline = time.monotonic() + message.timeout_s
        with tempfile.TemporaryDirectory(prefix=f"ptb-job{message.job_id}-") as tmp:
            if message.kind == "judge":
                report, log_path = _judge(message, beat, deadline, Path(tmp), settings)
            else:
                report, log_path = _evaluate(message, beat, deadline, Path(tmp), settings, host)
            report = report.model_copy(update={"log": beat.stop()})
            client.finish(report, log_path)
        return report.status
    finally:
        client.close()


def _evaluate(message: JobMessage, beat: _Heartbeat, deadline: float, tmp: Path, settings,
              host: str) -> tuple[FinishReport, Path | None]:
    from evaluator.errors import EvaluationCancelled, EvaluationError, EvaluationTimedOut
    from evaluator.runner import evaluate_checkpoint

    checkpoint = Path(message.checkpoint)
    dataset = Path(message.dataset_path) if message.dataset_path else None
    harness = settings.PTB_HARNESS_DIR
    beat.say(f"evaluating {checkpoint} on {message.benchmark} (limit {message.limit}, "
             f"max_tokens {message.max_tokens or 'ladder'}, provider {message.provider}, "
             f"dataset {dataset or 'the worker cache'}); each attempt in a fresh process")
    try:
        outcome = evaluate_checkpoint(
            checkpoint=checkpoint, benchmark=message.benchmark, limit=message.limit,
            max_tokens=message.max_tokens, log_dir=tmp, provider=message.provider,
            dataset_path=dataset, templates_dir=settings.PTB_TEMPLATES_DIR,
            judge_model=settings.PTB_EVAL_JUDGE_MODEL,
            healthbench_data=(harness / "src/eval/tasks/healthbench/evaluation_code/data/healthbench.jsonl"
                              if harness else None),
            on_progress=beat.on_progress, on_start=lambda total: beat.on_progress(0, total),
            should_cancel=beat.should_cancel, deadline=deadline,
            eval_metadata={"ptb_job": message.job_id, "ptb_run": message.run_id, "ptb_task": message.task_id},
        )
    except EvaluationTimedOut:
        return FinishReport(status="failed", reason=f"timed out after {message.timeout_s} s"), None
    except EvaluationCancelled as exc:
        return FinishReport(status="cancelled", reason=f"cancelled: {exc}"), None
    except EvaluationError as exc:
        return FinishReport(status="failed", reason=f"{type(exc).__name__}: {exc}"), None
    except Exception as exc:  # noqa: BLE001 - any crash must reach the job page, not only the worker log
        log.exception("job %s crashed", message.job_id)
        return FinishReport(status="failed", reason=f"worker error: {type(exc).__name__}: {exc}"), None
    beat.say(f"scored {outcome.score:.4f} on {outcome.samples_done}/{outcome.samples_total} samples "
             f"after {len(outcome.attempts)} attempt(s)")
    return FinishReport(
        status="succeeded", score=outcome.score, stderr=outcome.stderr,
        samples_done=outcome.samples_done, samples_total=outcome.samples_total,
        provenance={
            "inspect_ai": outcome.inspect_version, "provider": outcome.provider, "model_id": outcome.model_id,
            "chat_template_sha256": outcome.chat_template_sha256, "settings": outcome.settings,
            "versions": outcome.versions, "worker_host": host,
            "attempts": [{"max_tokens": a.max_tokens, "error": a.error, "seconds": round(a.seconds, 2),
                          "exit_code": a.exit_code, "pid": a.pid} for a in outcome.attempts],
            "started": outcome.started.isoformat(), "finished": outcome.finished.isoformat(),
            "seconds": round(outcome.seconds, 2),
        },
    ), outcome.log_path


def _judge(message: JobMessage, beat: _Heartbeat, deadline: float, tmp: Path,
           settings) -> tuple[FinishReport, None]:
    from evaluator.judge import JudgeFailed, JudgeNotConfigured, run_judge_command

    beat.on_progress(0, 1)
    beat.say(f"re-running the judge on {message.run_dir}")
    try:
        files = run_judge_command(Path(message.run_dir), command=settings.PTB_JUDGE_COMMAND, work=tmp,
                                  deadline=deadline, should_cancel=beat.should_cancel)
    except JudgeNotConfigured as exc:
        return FinishReport(status="failed", reason=f"on worker {socket.gethostname()}: {exc}"), None
    except JudgeFailed as exc:
        return FinishReport(status="cancelled" if beat.should_cancel() else "failed", reason=str(exc)), None
    beat.on_progress(1, 1)
    beat.say(f"the judge wrote {', '.join(sorted(files))}")
    return FinishReport(status="succeeded", verdict_files=files, samples_done=1, samples_total=1), None
