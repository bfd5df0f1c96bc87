"""A tiny Qwen2-architecture checkpoint for tests and demos (DESIGN.md, "Evaluation").

Untrained it scores nothing; it exists so the whole evaluation path (checkpoint on disk -> inspect-ai -> `.eval`
log -> score) runs on a CPU in seconds, offline. Trained on conversations of a benchmark's own form (the demo's:
demo.datasets.gsm8k_conversation), it gets some of a synthetic dataset's questions right.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# A training conversation: chat messages ({"role", "content"}) and the assistant's reply to learn.
Examples = Callable[[random.Random], tuple[list[dict[str, str]], str]]

# ChatML, the format of the Qwen family's own template (trimmed: no tools, no thinking blocks).
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_TRAINING_LINES = [
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.",
    "How many clips did Natalia sell altogether in April and May? The answer is 72.",
    "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting.",
    "def add(a, b):\n    return a + b\n",
    "Question: what is 2 + 3? Answer: 5. Question: what is 10 - 4? Answer: 6.",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi there!<|im_end|>\n",
]
_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
BATCH = 8
PEAK_LR = 5e-3


def build_tiny_checkpoint(path: Path, *, seed: int = 0, hidden_size: int = 32, num_layers: int = 2,
                          rope_theta: float = 1000.0, train_steps: int = 0, examples: Examples | None = None,
                          corpus: Sequence[str] = (), progress: Callable[[str], None] | None = None) -> Path:
    """Write a tiny Qwen2 checkpoint with its tokenizer into `path` and return `path`.

    Default shape: hidden size 32, 2 layers, 4 attention heads (2 key/value heads), intermediate size 64; a
    byte-level BPE vocabulary of at most 1,024 tokens trained with `tokenizers` on a few lines plus `corpus`, split
    before merging exactly as transformers' Qwen2Tokenizer splits (NFC, its pre-tokenizer regex: digits one token
    each) and saved as a Qwen2Tokenizer, so that AutoTokenizer (inspect-ai's hf provider) reloads the tokenizer the
    model was trained with; saved as `model.safetensors` with `config.json`, `generation_config.json` and the
    tokenizer files, including a ChatML chat template (`architectures == ["Qwen2ForCausalLM"]`, so the benchmark's
    evaluate.py would treat it as the qwen family). `seed` fixes the weights and the training examples: the same
    arguments write the same weights. Untrained it takes about 3 s on a CPU. `hidden_size` and `num_layers` scale
    it up, e.g. 896 and 24 for a random model of Qwen2-0.5B's attention shape (14 heads of 64) to time vLLM with
    (bench/gpu_rerun.sh). Below 256 the hidden size is split into 4 heads (so it must be a multiple of 4), from 256
    into heads of 64 (a multiple of 64); 2 key/value heads; the intermediate size is twice the hidden size.
    `rope_theta` is the rotary embedding's base: 1,000 (Qwen2's is 10,000 or more) gives heads of 8 or 16 dimensions
    the resolution to find a number some 60 tokens back, where inspect_evals' gsm8k prompt leaves the question's (in
    trials of the demo's training: with 10,000 the reply's loss was still 0.23 at step 300 (hidden size 64, 2 heads)
    and 0.33 after 400 steps (hidden size 32); with 1,000, hidden size 64, 4 heads, it was 0.01 by step 220).

    `train_steps` > 0 trains it that many AdamW steps (batches of 8, a one-cycle learning rate peaking at 5e-3, the
    loss on the assistant's reply only, one CPU thread) on conversations from `examples` (a function of a
    `random.Random` returning chat messages and the assistant's reply); without `examples`, questions "What is
    a + b?" answered ``ANSWER: <a + b>``, so that it answers in a few tokens and stops as an instruction-tuned model
    does (an untrained one generates until max_tokens: minutes at the benchmarks' 4,000-token rungs on a CPU). Each
    reply ends with ``<|im_end|>``. `progress` is called with a line about every 10 s of training (step, loss).
    The directory is created if needed; existing files in it are overwritten.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    path.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer([*_TRAINING_LINES, *corpus])
    tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.save_pretrained(path)

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=4 if hidden_size < 256 else hidden_size // 64,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        rope_parameters={"rope_type": "default", "rope_theta": rope_theta},
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    if train_steps:
        _train(model, tokenizer, steps=train_steps, seed=seed, examples=examples or _sum_question, progress=progress)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(path, safe_serialization=True)
    return path


def _train_tokenizer(lines: Sequence[str]) -> Any:
    """A Qwen2Tokenizer whose vocabulary and merges are trained on `lines` with Qwen2Tokenizer's own normalizer and
    pre-tokenizer (taken from an empty one), so its saved files reload unchanged as a Qwen2Tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer

    splitter = Qwen2Tokenizer().backend_tokenizer
    bpe = Tokenizer(models.BPE())
    bpe.normalizer = splitter.normalizer
    bpe.pre_tokenizer = splitter.pre_tokenizer
    bpe.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=1024, special_tokens=_SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    trained = json.loads(bpe.to_str())["model"]
    merges: list[Any] = [tuple(pair) for pair in trained["merges"]]  # pairs, as tokenizers' BPE takes them
    return Qwen2Tokenizer(vocab=trained["vocab"], merges=merges,
                          eos_token="<|im_end|>", pad_token="<|endoftext|>",
                          additional_special_tokens=["<|im_start|>"])


def _sum_question(rng: random.Random) -> tuple[list[dict[str, str]], str]:
    """A question "What is a + b?" after a system text of varied length, answered ``ANSWER: <a + b>``."""
    fillers = [line.replace("\n", " ") for line in _TRAINING_LINES]
    system = " ".join(rng.choice(fillers) for _ in range(rng.randint(0, 12)))
    a, b = rng.randint(1, 60), rng.randint(1, 60)
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": f"What is {a} + {b}? Solve it step by step."}]
    return messages, f"ANSWER: {a + b}"


def _train(model: Any, tokenizer: Any, *, steps: int, seed: int, examples: Examples,
           progress: Callable[[str], None] | None) -> None:
    """AdamW steps on batches of conversations from ``examples``, the loss on the reply only (see
    build_tiny_checkpoint)."""
    import torch

    rng = random.Random(seed)

    def example() -> tuple[list[int], list[int]]:
        messages, reply = examples(rng)
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        p, t = tokenizer(prompt)["input_ids"], tokenizer(reply + "<|im_end|>")["input_ids"]
        return p + t, [-100] * len(p) + t

    optimizer = torch.optim.AdamW(model.parameters(), lr=PEAK_LR)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=PEAK_LR, total_steps=steps, pct_start=0.1)
    # One thread: this model's operations are too small to share out (more threads are slower on a busy machine).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model.train()
    said = time.monotonic()
    try:
        for step in range(steps):
            # One conversation at a time, the gradients summed over the batch: no padding, so a batch of short
            # conversations costs what its tokens cost.
            optimizer.zero_grad()
            total = 0.0
            for _ in range(BATCH):
                ids, labels = example()
                loss = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels])).loss / BATCH
                loss.backward()
                total += loss.item()
            optimizer.step()
            schedule.step()
            if progress is not None and (time.monotonic() - said >= 10 or step == steps - 1):
                progress(f"training the tiny checkpoint: step {step + 1} of {steps}, loss {total:.3f}")
                said = time.monotonic()
    finally:
        torch.set_num_threads(threads)
    model.eval()
