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


_NAMES = ("Sam", "Ana", "Lee", "Mia", "Tom")
_THINGS = ("apples", "pears", "cards", "books")


def _gsm8k_row(name: str, a: int, b: int, thing: str) -> dict[str, Any]:
    """One made-up openai/gsm8k record (``question``, ``answer`` ending ``#### <number>``): name has a things
    and buys b more."""
    return {"question": f"{name} has {a} {thing} and buys {b} more. How many {thing} does {name} have?",
            "answer": f"{name} has {a} + {b} = {a + b} {thing}.\n#### {a + b}"}


def gsm8k_conversation(rng: random.Random) -> tuple[list[dict[str, str]], str]:
    """A training conversation for the demo's tiny checkpoint (evaluator.tiny_model ``examples``), as
    inspect_evals' gsm8k task asks and answers it: half the time a system message of 10 solved examples
    (its ``sample_to_fewshot``, numbers 100-139 as in the synthetic train split), then the user's question in
    its MATH_PROMPT_TEMPLATE; the reply is the reasoning and ``ANSWER: <n>`` as the examples give them. The
    questions have the synthetic dataset's form with other names and things and numbers 1-20, so the 8 demo test
    questions (2 + 3 ... 9 + 10) are among what it may see: the demo shows a checkpoint that gets some right,
    not a measurement."""
    from inspect_evals.gsm8k.gsm8k import MATH_PROMPT_TEMPLATE, record_to_sample, sample_to_fewshot

    messages = []
    if rng.random() < 0.5:
        shots = [record_to_sample(_gsm8k_row(rng.choice(_NAMES), x, x + 1, rng.choice(_THINGS)))
                 for x in rng.sample(range(100, 140), 10)]
        messages.append({"role": "system", "content": "\n\n".join(sample_to_fewshot(s) for s in shots)})
    a, b = rng.randint(1, 20), rng.randint(1, 20)
    name, thing = rng.choice(_NAMES), rng.choice(_THINGS)
    row = _gsm8k_row(name, a, b, thing)
    messages.append({"role": "user", "content": MATH_PROMPT_TEMPLATE.format(prompt=row["question"])})
    return messages, f"{name} has {a} + {b} = {a + b} {thing}.\n\nANSWER: {a + b}"


def gsm8k_corpus() -> list[str]:
    """Text the tiny checkpoint's tokenizer is trained on for the demo: the task's prompt and solved examples."""
    from inspect_evals.gsm8k.gsm8k import MATH_PROMPT_TEMPLATE, record_to_sample, sample_to_fewshot

    return [MATH_PROMPT_TEMPLATE] + [sample_to_fewshot(record_to_sample(_gsm8k_row(n, i, i + 1, t)))
                                     for n in _NAMES for t in _THINGS for i in range(3)]


def synthetic_rows(benchmark: str, n: int) -> dict[str, list[dict[str, Any]]]:
    """Split -> ``n`` synthetic records (gsm8k's train split gets max(n, 10): its task takes 10 few-shot
    examples from it). Raises KeyError for a benchmark without a Hugging Face dataset."""
    if benchmark == "gsm8k":
        def row(i: int) -> dict[str, Any]:
            return _gsm8k_row("Sam", i + 2, i + 3, "apples")
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
