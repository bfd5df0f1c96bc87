"""One evaluation attempt in a process of its own: ``python -m evaluator.attempt SPEC.json OUT_FD IN_FD``.

The harness starts every attempt of its retry ladder as a fresh `python evaluate.py` (src/run_task.sh,
`run_evaluation`), so an out-of-memory GPU, a wedged vLLM server or a leaked CUDA context of one attempt never
reaches the next; evaluator.runner does the same with this module. SPEC.json (written by the runner, an
evaluator.protocol.AttemptSpec) holds the benchmark, checkpoint, inspect model name and model_args, the eval
settings (max_tokens ...), limit, log folder and dataset.

The process talks to its runner over two pipes, one JSON object a line, each a model of evaluator.protocol
validated on both ends (stdout and stderr are free for inspect, transformers and vLLM, and go to the attempt's
log file):

* to the runner: ``Started`` (``{"event": "started", "samples_total": n, "pid": its process id}``), ``Progress``
  (``{"event": "progress", "done": i, "total": n}``) after each successfully finished sample, ``Gate``
  (``{"event": "gate"}``) before each sample starts, then it waits for a ``GateAnswer`` (``{"go": true|false}``:
  false fails the sample, which ends the run: a cancel); finally ``Done`` (``{"event": "done", "error":
  text|null, "log_path": path|null}``) or ``SetupFailed`` (``{"event": "error", "type": class name, "message":
  text}``) when the task or model could not be set up.
"""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import TextIO

from evaluator.protocol import AttemptSpec, Done, Gate, GateAnswer, Progress, SetupFailed, Started


class _Channel:
    """The two pipes to the runner; `ask` sends a question and blocks for its answer (one at a time)."""

    def __init__(self, out_fd: int, in_fd: int) -> None:
        self.out: TextIO = os.fdopen(out_fd, "w", buffering=1)
        self.inp: TextIO = os.fdopen(in_fd, "r")
        self.lock = threading.Lock()

    def send(self, event: Started | Progress | Done | SetupFailed) -> None:
        with self.lock:
            self.out.write(event.model_dump_json() + "\n")
            self.out.flush()

    def ask(self, question: Gate) -> GateAnswer:
        """Send ``question`` and read the runner's answer; a closed pipe (the runner is gone) answers no."""
        with self.lock:
            self.out.write(question.model_dump_json() + "\n")
            self.out.flush()
            line = self.inp.readline()
        return GateAnswer.model_validate_json(line) if line else GateAnswer(go=False)


def _install_hooks(channel: _Channel, total: int) -> None:
    from inspect_ai.hooks import Hooks, SampleEnd, hooks

    done = [0]

    @hooks(name="ptb_attempt_progress", description="Reports finished samples to the evaluator's runner.")
    class _ProgressHook(Hooks):
        async def on_sample_end(self, data: SampleEnd) -> None:
            # Errored samples end here too; they end the run (fail_on_error), so they are not progress.
            if data.sample.error is None:
                done[0] += 1
                channel.send(Progress(done=done[0], total=total))


def _with_gate(task, channel: _Channel):
    from inspect_ai import task_with
    from inspect_ai.solver import Generate, Solver, TaskState, chain, solver

    @solver("ptb_cancel_gate")
    def cancel_gate() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if not channel.ask(Gate()).go:
                raise RuntimeError("evaluation cancelled")
            return state

        return solve

    return task_with(task, solver=chain(cancel_gate(), task.solver))


def main(spec_path: str, out_fd: int, in_fd: int) -> int:
    channel = _Channel(out_fd, in_fd)
    spec = AttemptSpec.model_validate_json(Path(spec_path).read_text())
    from evaluator.benchmarks import load_task, spec_for
    from evaluator.errors import EvaluationError

    bench = spec_for(spec.benchmark)
    dataset = Path(spec.dataset_path) if spec.dataset_path else None
    try:
        task = load_task(bench, dataset_path=dataset, judge_model=spec.judge_model,
                         healthbench_data=Path(spec.healthbench_data) if spec.healthbench_data else None)
    except EvaluationError as exc:
        channel.send(SetupFailed(type=type(exc).__name__, message=str(exc)))
        return 3
    size = len(task.dataset)
    total = (size if spec.limit is None else min(spec.limit, size)) * (task.epochs or 1)
    channel.send(Started(samples_total=total, pid=os.getpid()))
    _install_hooks(channel, total)
    task = _with_gate(task, channel)

    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelInfo, get_model, set_model_info

    model_id = spec.model_id
    # inspect looks up model info by name after every generate and, for a name missing from its database,
    # instantiates the provider again without our model_args (a second copy of the weights, or a second vLLM
    # server). Registering the name stops that.
    set_model_info(model_id, ModelInfo(organization="local checkpoint", context_length=spec.context_length))
    try:
        model = get_model(model_id, memoize=False, **spec.model_args)
    except Exception as exc:  # noqa: BLE001 - reported to the runner, which classifies it
        channel.send(SetupFailed(type="CheckpointLoadError", message=f"cannot load {model_id}: "
                                 f"{type(exc).__name__}: {exc}"))
        return 4
    try:
        logs = inspect_eval(task, model=model, limit=spec.limit, log_dir=spec.log_dir, log_format="eval",
                            display="none", metadata=spec.metadata or None, **spec.eval_settings)
    except Exception as exc:  # noqa: BLE001 - inspect raises for errors outside samples (e.g. model setup)
        channel.send(Done(error=f"{type(exc).__name__}: {exc}", log_path=None))
        return 0
    log = logs[0]
    error = None if log.status == "success" else (
        log.error.message if log.error else f"inspect ended with status {log.status}")
    channel.send(Done(error=error, log_path=log.location))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
