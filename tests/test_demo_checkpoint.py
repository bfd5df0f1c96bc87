"""The demo's tiny checkpoint (issue 29): ``demo_worker_assets`` trains it on word problems of the demo dataset's form,
and the real inspect_evals gsm8k task, run by the worker's runner on the demo's local dataset, finds some of its 8
answers right (it answered "ANSWER: 8" to every question and scored 0). Nothing is mocked: a real training on the
CPU (about a minute of one core) and a real evaluation; the make_demo_results tree is stood in for by one run
directory with a config-only final_model/, as that tree has."""
from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from inspect_ai.log import read_eval_log

from tests.conftest import RERUN_METHOD, RERUN_RUN_DIR, write_run
from traces.layout import run_id as make_run_id

pytestmark = pytest.mark.slow


def test_the_demo_checkpoint_gets_some_demo_questions_right(tmp_path: Path, settings, templates_dir: Path) -> None:
    from evaluator.runner import evaluate_checkpoint

    root = tmp_path / "demo-results"
    run_dir = write_run(root, checkpoint=None)
    (run_dir / "final_model").mkdir()
    (run_dir / "final_model" / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"]}))
    settings.PTB_LOCAL_DATASETS_DIR = tmp_path / "datasets"
    settings.DATA_DIR = tmp_path / "data"
    settings.PTB_PUBLIC_URL = "http://127.0.0.1:8123"
    out = StringIO()
    call_command("demo_worker_assets", str(root), stdout=out)
    lines = out.getvalue().splitlines()
    assert any(line.startswith("training the tiny checkpoint: step 1400 of 1400, loss ") for line in lines)
    run_id = make_run_id(RERUN_METHOD, RERUN_RUN_DIR)
    assert lines[-1].startswith("The demo run to re-evaluate") and lines[-1].endswith(
        f": http://127.0.0.1:8123/runs/{run_id}/")  # the URL, not a path (issue 29)

    outcome = evaluate_checkpoint(checkpoint=run_dir / "final_model", benchmark="gsm8k", limit=None, max_tokens=None,
                                  log_dir=tmp_path / "logs", provider="hf",
                                  dataset_path=tmp_path / "datasets" / "gsm8k-demo", templates_dir=templates_dir,
                                  eval_metadata={"ptb_job": 0, "ptb_task": "demo"})
    log = read_eval_log(str(outcome.log_path))
    answers = [(s.target, s.output.completion, s.scores["match"].value) for s in log.samples]
    assert len(answers) == 8 and log.eval.task == "inspect_evals/gsm8k"
    right = [a for a in answers if a[2] == "C"]
    assert 0 < len(right) < 8, answers  # some right: a trained checkpoint, not a lookup table
    assert outcome.score == pytest.approx(len(right) / 8)
    assert all(completion.strip().splitlines()[-1].startswith("ANSWER: ") for _, completion, _ in answers), answers
