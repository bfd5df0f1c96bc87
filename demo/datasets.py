"""Small synthetic stand-ins for each benchmark's Hugging Face dataset, in the hub dataset's own fields, so the real
inspect_evals tasks run on a machine without a model hub (demo and tests; evaluator.hf_cache writes them as the
`datasets` cache). They are made up: never the benchmark's questions, never its scores.

Fields per dataset (as each task's ``record_to_sample`` reads them): openai/gsm8k ``question``/``answer`` (the
answer ends ``#### <number>``); math-ai/aime25 ``id``/``problem``/``answer``; openai/openai_humaneval
``task_id``/``prompt``/``canonical_solution``/``test``/``entry_point``; Idavidrein/gpqa (gpqa_main) ``Question``,
``Correct Answer``, ``Incorrect Answer 1..3``, ``Record ID``; BFCL exec_simple ``question`` (a list holding one
list of chat messages), ``function`` (tool specs), ``ground_truth`` (one call as Python source).
"""
from __future__ import annotations

import random
from typing import Any

# The demo gsm8k questions a tiny checkpoint is trained on (gsm8k_conversation): rows 0-5 of the _gsm8k_row form,
# 6 of the 8 test questions of the demo dataset (demo_worker_assets writes rows 0-7); the other 2 it never sees.
# Its train split (the task's few-shot examples) holds rows 100-109.
GSM8K_TRAINED_ROWS = range(6)


def _gsm8k_row(i: int) -> dict[str, Any]:
    """Row ``i`` of the synthetic openai/gsm8k: "Sam has i+2 apples and buys i+3 more", answer 2i+5."""
    return {"question": f"Sam has {i + 2} apples and buys {i + 3} more. How many apples does Sam have?",
            "answer": f"Sam has {i + 2} + {i + 3} = {2 * i + 5} apples.\n#### {2 * i + 5}"}


def synthetic_rows(benchmark: str, n: int) -> dict[str, list[dict[str, Any]]]:
    """Split -> ``n`` synthetic records (gsm8k's train split gets max(n, 10): its task takes 10 few-shot
    examples from it). Raises KeyError for a benchmark without a Hugging Face dataset."""
    if benchmark == "gsm8k":
        return {"test": [_gsm8k_row(i) for i in range(n)], "train": [_gsm8k_row(100 + i) for i in range(max(n, 10))]}
    if benchmark == "aime2025":
        return {"test": [{"id": str(i), "problem": f"Find the remainder when {7 * i + 3} is divided by 5.",
                          "answer": str((7 * i + 3) % 5)} for i in range(n)]}
    if benchmark == "humaneval":
        return {"test": [{
            "task_id": f"Synthetic/{i}", "entry_point": f"add_{i}",
            "prompt": f'def add_{i}(x: int) -> int:\n    """Return x plus {i}."""\n',
            "canonical_solution": f"    return x + {i}\n",
            "test": f"def check(candidate):\n    assert candidate(1) == {1 + i}\n",
        } for i in range(n)]}
    if benchmark == "gpqamain":
        return {"train": [{"Question": f"Which number is {i} squared?", "Correct Answer": str(i * i),
                           "Incorrect Answer 1": str(i * i + 1), "Incorrect Answer 2": str(i * i + 2),
                           "Incorrect Answer 3": str(i * i + 3), "Record ID": f"synthetic{i}"} for i in range(n)]}
    if benchmark == "bfcl":
        tool = {"name": "add", "description": "Add two integers.", "parameters": {
            "type": "dict", "required": ["a", "b"], "properties": {
                "a": {"type": "integer", "description": "the first addend"},
                "b": {"type": "integer", "description": "the second addend"}}}}
        return {"train": [{"question": [[{"role": "user", "content": f"Add {i} and {i + 1}."}]], "function": [tool],
                           "ground_truth": [f"add(a={i}, b={i + 1})"]} for i in range(n)]}
    raise KeyError(f"no synthetic dataset for {benchmark!r}")


def gsm8k_conversation(rng: random.Random) -> tuple[list[dict[str, str]], str]:
    """One training conversation for evaluator.tiny_model, as inspect_evals' gsm8k task (0.3.103) asks a question of
    the synthetic gsm8k dataset: a system message of few-shot examples of its train split in the task's own few-shot
    form (in a random order: the task shuffles them with its own seed; all 10 as the task gives them one time in
    five, else 0 to 2 of them, so most conversations are short and a training step cheap), then the question of row
    ``rng.choice(GSM8K_TRAINED_ROWS)`` in the task's prompt template. Returns (chat messages, the reply to learn:
    ``ANSWER: <n>``). Needs inspect_evals (a worker's requirements)."""
    from inspect_evals.gsm8k.gsm8k import MATH_PROMPT_TEMPLATE, record_to_sample, sample_to_fewshot

    shots = synthetic_rows("gsm8k", 10)["train"]
    count = len(shots) if rng.random() < 0.2 else rng.randint(0, 2)
    system = "\n\n".join(sample_to_fewshot(record_to_sample(row)) for row in rng.sample(shots, count))
    row = _gsm8k_row(rng.choice(GSM8K_TRAINED_ROWS))
    question = MATH_PROMPT_TEMPLATE.replace("{prompt}", row["question"])
    return ([{"role": "system", "content": system}, {"role": "user", "content": question}],
            f"ANSWER: {record_to_sample(row).target}")


def gsm8k_corpus() -> list[str]:
    """Texts a tiny checkpoint's tokenizer is trained on (evaluator.tiny_model's ``corpus``), so the task's fixed
    phrasing takes few tokens: the 10 few-shot examples as the task writes them and the prompt of each trained row."""
    from inspect_evals.gsm8k.gsm8k import MATH_PROMPT_TEMPLATE, record_to_sample, sample_to_fewshot

    shots = [sample_to_fewshot(record_to_sample(row)) for row in synthetic_rows("gsm8k", 10)["train"]]
    return shots + [MATH_PROMPT_TEMPLATE.replace("{prompt}", _gsm8k_row(i)["question"]) for i in GSM8K_TRAINED_ROWS]
