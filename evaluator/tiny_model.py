"""A tiny Qwen2-architecture checkpoint for tests and demos (DESIGN.md, "Evaluation").

It scores nothing meaningful; it exists so the whole evaluation path (checkpoint on disk -> inspect-ai ->
`.eval` log -> score) runs on a CPU in seconds, offline.
"""

from __future__ import annotations

from pathlib import Path

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


def build_tiny_checkpoint(path: Path, *, seed: int = 0, hidden_size: int = 32, num_layers: int = 2,
                          train_steps: int = 0) -> Path:
    """Write a randomly initialised tiny Qwen2 checkpoint with its tokenizer into `path` and return `path`.

    Default shape: hidden size 32, 2 layers, 4 attention heads (2 key/value heads), intermediate size 64, a
    byte-level BPE vocabulary of at most 512 tokens trained with `tokenizers` on a few lines; about 30k
    parameters, saved as `model.safetensors` with `config.json`, `generation_config.json` and the tokenizer
    files, including a ChatML chat template (`architectures == ["Qwen2ForCausalLM"]`, so the benchmark's
    evaluate.py would treat it as the qwen family). `seed` fixes the weights. Takes about 3 s on a CPU.
    `hidden_size` and `num_layers` scale it up, e.g. 896 and 24 for a random model of Qwen2-0.5B's attention
    shape (14 heads of 64) to time vLLM with (bench/gpu_rerun.sh). Below 256 the hidden size is split into 4
    heads (so it must be a multiple of 4), from 256 into heads of 64 (a multiple of 64); 2 key/value heads;
    the intermediate size is twice the hidden size.
    `train_steps` > 0 trains it that many AdamW steps on chat-formatted questions answered ``ANSWER: <n>``
    followed by ``<|im_end|>``, so that it answers in a few tokens and stops, as an instruction-tuned model does
    (an untrained one generates until max_tokens: minutes at the benchmarks' 4,000-token rungs on a CPU); it
    still answers wrongly, mostly. 300 steps take about 10 s on a CPU.
    The directory is created if needed; existing files in it are overwritten.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    path.mkdir(parents=True, exist_ok=True)

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        _TRAINING_LINES,
        trainers.BpeTrainer(
            vocab_size=512,
            special_tokens=_SPECIAL_TOKENS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
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
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    if train_steps:
        _teach_short_answers(model, tokenizer, steps=train_steps, seed=seed)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(path, safe_serialization=True)
    return path


def _teach_short_answers(model, tokenizer, *, steps: int, seed: int) -> None:
    """A few AdamW steps on ChatML conversations whose assistant turn is ``ANSWER: <n><|im_end|>`` (loss on that
    turn only), after system texts of varied length, so the model learns to answer briefly and stop."""
    import random

    import torch

    rng = random.Random(seed)
    fillers = [line.replace("\n", " ") for line in _TRAINING_LINES]

    def example() -> tuple[list[int], list[int]]:
        system = " ".join(rng.choice(fillers) for _ in range(rng.randint(0, 12)))
        a, b = rng.randint(1, 60), rng.randint(1, 60)
        prompt = (f"<|im_start|>system\n{system}<|im_end|>\n" if system else "") + (
            f"<|im_start|>user\nWhat is {a} + {b}? Solve it step by step.<|im_end|>\n<|im_start|>assistant\n")
        reply = f"ANSWER: {a + b}<|im_end|>"
        p, t = tokenizer(prompt)["input_ids"], tokenizer(reply)["input_ids"]
        return p + t, [-100] * len(p) + t

    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        batch = [example() for _ in range(8)]
        width = max(len(ids) for ids, _ in batch)
        ids = torch.tensor([x + [tokenizer.pad_token_id] * (width - len(x)) for x, _ in batch])
        labels = torch.tensor([y + [-100] * (width - len(y)) for _, y in batch])
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x, _ in batch])
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
