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

from typing import Any


def synthetic_rows(benchmark: str, n: int) -> dict[str, list[dict[str, Any]]]:
    """Split -> ``n`` synthetic records (gsm8k's train split gets max(n, 10): its task takes 10 few-shot
    examples from it). Raises KeyError for a benchmark without a Hugging Face dataset."""
    if benchmark == "gsm8k":
        def row(i: int) -> dict[str, Any]:
            return {"question": f"Sam has {i + 2} apples and buys {i + 3} more. How many apples does Sam have?",
                    "answer": f"Sam has {i + 2} + {i + 3} = {2 * i + 5} apples.\n#### {2 * i + 5}"}
        return {"test": [row(i) for i in range(n)], "train": [row(100 + i) for i in range(max(n, 10))]}
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
