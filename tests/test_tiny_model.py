"""The tiny checkpoint (evaluator.tiny_model) through the real inspect-ai evaluation (issue 29): its tokenizer reloads
through AutoTokenizer (inspect-ai's hf provider) as the one it was trained with, and the demo checkpoint that
``make worker`` builds (demo_worker_assets: trained on 6 of the 8 questions of the synthetic gsm8k dataset) gets
some of them right through the real inspect_evals gsm8k task, not all."""
from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from inspect_ai.log import read_eval_log
from transformers import AutoTokenizer

from demo.datasets import GSM8K_TRAINED_ROWS, gsm8k_conversation
from evaluator.runner import evaluate_checkpoint

from .conftest import write_run

pytestmark = pytest.mark.django_db


def test_the_saved_tokenizer_reloads_as_trained(tiny_checkpoint: Path) -> None:
    import random

    # inspect-ai loads the folder with AutoTokenizer, which picks the class by config.json's model_type (qwen2): the
    # files are a Qwen2Tokenizer's, split before merging as Qwen2Tokenizer splits (digits one token each).
    reloaded = AutoTokenizer.from_pretrained(tiny_checkpoint)
    assert type(reloaded).__name__ == "Qwen2Tokenizer"
    assert json.loads((tiny_checkpoint / "config.json").read_text())["model_type"] == "qwen2"
    messages, reply = gsm8k_conversation(random.Random(3))
    text = reloaded.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) + reply
    ids = reloaded(text)["input_ids"]
    assert reloaded.decode(ids) == text
    assert [reloaded.decode([i]) for i in reloaded("Sam has 17")["input_ids"]][-3:] == [" ", "1", "7"]
    assert reloaded.eos_token == "<|im_end|>" and reloaded.convert_tokens_to_ids("<|im_start|>") == 1


@pytest.mark.slow
def test_the_demo_checkpoint_gets_some_answers_right(tmp_path: Path, settings, templates_dir: Path) -> None:
    root = tmp_path / "demo-results"
    run_dir = write_run(root, checkpoint=None, run_dir="gsm8k_Qwen_Qwen3-1.7B-Base_17000001")
    (run_dir / "final_model").mkdir()
    (run_dir / "final_model" / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"]}))
    settings.PTB_LOCAL_DATASETS_DIR = tmp_path / "datasets"
    settings.DATA_DIR = tmp_path / "data"
    out = StringIO()
    call_command("demo_worker_assets", str(root), stdout=out)  # the default training, as `make worker` runs it
    assert "training the tiny checkpoint: step" in out.getvalue()
    outcome = evaluate_checkpoint(checkpoint=run_dir / "final_model", benchmark="gsm8k", limit=None, max_tokens=16,
                                  log_dir=tmp_path / "logs", provider="hf",
                                  dataset_path=tmp_path / "datasets" / "gsm8k-demo", templates_dir=templates_dir)
    log = read_eval_log(str(outcome.log_path))
    assert log.samples is not None
    answers = {s.input: (s.output.completion, s.target) for s in log.samples}  # type: ignore[union-attr]
    right = sorted(question for question, (said, target) in answers.items() if said.strip() == f"ANSWER: {target}")
    trained = {f"Sam has {i + 2} apples" for i in GSM8K_TRAINED_ROWS}
    # Every answer is in the form the task asks for; some are right, not all: the 2 questions it never saw it gets
    # wrong, most of the 6 it was trained on right.
    assert all(said.startswith("ANSWER: ") for said, _ in answers.values()), answers
    assert 0 < outcome.score < 1 and outcome.score == len(right) / 8, (outcome.score, answers)
    assert all(question[:len("Sam has 2 apples")] in trained for question in right), right
    assert len(right) >= 4, answers
