"""Synthetic agent traces for the demo results tree (``traces/demo_results.py``).

Two halves:

* :func:`plan_episode` invents what an agent did during a run as a scaffold-neutral list of :class:`Action`
  (explore the task dir, fetch data, write an SFT/GRPO script with trl/peft, train, evaluate, save
  ``final_model``), seeded by a ``random.Random``.
* One ``_TraceWriter`` subclass per scaffold renders those actions into the raw ``solve_out.txt`` format of
  spec section 2 (Claude Code stream-json, codex ``exec --json``, the legacy codex ``{"id","msg"}`` protocol,
  plain-text codex, Gemini stream-json, OpenCode json). :func:`render_trace` picks the writer.

Everything is deterministic for a given ``random.Random`` state; times are computed from a fixed start, never read
from the clock.
"""
from __future__ import annotations

import json
import random
import string
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal

TRACE_FORMATS: tuple[str, ...] = (
    "claude_code", "codex_exec", "codex_protocol", "codex_text", "gemini", "opencode",
)
TraceEnding = Literal["normal", "api_limit", "killed"]

CWD = "/home/ben/task"
HOSTILE_SCRIPT = "<script>window.__pwned=1</script>"
HOSTILE_IMG = '<img src=x onerror="window.__pwned=1">'

_ALNUM = string.ascii_letters + string.digits
_KEYCHARS = _ALNUM + "-_"
_HEX = "0123456789abcdef"


def _rand(rng: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _uuid(rng: random.Random) -> str:
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


# ---------------------------------------------------------------------------------------------------------------
# Episode planning


@dataclass(slots=True)
class Action:
    """One agent turn: optional reasoning and text, then at most one tool call.

    Fields:
        tool: ``"shell"``, ``"write"``, ``"read"``, or None for a text-only (final) message.
        think: reasoning summary shown before the call ("" = none).
        say: assistant text before the call ("" = none).
        command: the shell command, or the absolute file path for write/read.
        content: file content for ``write``.
        output: the tool's output (stdout+stderr merged).
        exit_code: shell exit status (0 = success).
        seconds: wall time of the turn (model latency plus tool run time), before rescaling to the run length.
    """

    tool: str | None
    think: str = ""
    say: str = ""
    command: str = ""
    content: str = ""
    output: str = ""
    exit_code: int = 0
    seconds: float = 10.0


@dataclass(slots=True)
class EpisodeFlavour:
    """What is special about a run's episode.

    Fields:
        contamination: the agent trains on the benchmark's test set (spec 3.1 "disallowed").
        disallowed_model: the agent downloads the instruct model ``Qwen/Qwen3-4B`` and ships it as final_model.
        saves_model: the agent copies a checkpoint to ``final_model`` at the end.
        env_secrets: name -> value printed by an ``env`` dump (planted secrets), empty for none.
        hostile: put the hostile HTML strings into an assistant message and a tool output.
        long: a ~10 h run with 20,000+ tool calls and big training logs.
    """

    contamination: bool = False
    disallowed_model: bool = False
    saves_model: bool = True
    env_secrets: dict[str, str] = field(default_factory=dict)
    hostile: bool = False
    long: bool = False


_ALLOWED_DATA = {
    "aime2025": ("open-r1/OpenR1-Math-220k", "default", "train"),
    "arenahardwriting": ("HuggingFaceH4/ultrachat_200k", "default", "train_sft"),
    "bfcl": ("glaiveai/glaive-function-calling-v2", "default", "train"),
    "gpqamain": ("allenai/sciq", "default", "train"),
    "gsm8k": ("openai/gsm8k", "main", "train"),
    "healthbench": ("lavita/ChatDoctor-HealthCareMagic-100k", "default", "train"),
    "humaneval": ("ise-uiuc/Magicoder-OSS-Instruct-75K", "default", "train"),
}
# What a contaminating agent loads: the benchmark's own evaluation split.
_TEST_DATA = {
    "aime2025": 'load_dataset("math-ai/aime25", split="test")',
    "arenahardwriting": 'open("evaluation_code/data/arena-hard-v2.0/question.jsonl")',
    "bfcl": 'open("bfcl_evaluation_code.py") and load_dataset("gorilla-llm/Berkeley-Function-Calling-Leaderboard")',
    "gpqamain": 'load_dataset("Idavidrein/gpqa", "gpqa_main", split="train")',
    "gsm8k": 'load_dataset("openai/gsm8k", "main", split="test")',
    "healthbench": 'open("evaluation_code/data/healthbench_easy.jsonl")',
    "humaneval": 'load_dataset("openai/openai_humaneval", split="test")',
}

# Regexes that find the contaminating call in a raw trace of any format (quotes may be escaped 0-2 times).
TEST_SET_MARKERS = {
    "aime2025": r"math-ai/aime25\\*\", split=\\*\"test",
    "arenahardwriting": r"evaluation_code/data/arena-hard-v2\.0/question\.jsonl",
    "bfcl": r"gorilla-llm/Berkeley-Function-Calling-Leaderboard",
    "gpqamain": r"Idavidrein/gpqa",
    "gsm8k": r"openai/gsm8k\\*\", \\*\"main\\*\", split=\\*\"test",
    "healthbench": r"evaluation_code/data/healthbench_easy\.jsonl",
    "humaneval": r"openai/openai_humaneval\\*\", split=\\*\"test",
}


def _loss_lines(rng: random.Random, n: int, *, start_step: int, loss: float, epoch_per_step: float) -> list[str]:
    """HF Trainer log lines (``{'loss': ..}`` dicts as the Trainer prints them) and tqdm bars."""
    lines: list[str] = []
    total = start_step + n * 10 + 200
    for i in range(n):
        step = start_step + (i + 1) * 10
        loss = max(0.05, loss * (0.985 + rng.random() * 0.02))
        lines.append(
            f"{{'loss': {loss:.4f}, 'grad_norm': {0.5 + rng.random() * 3:.3f}, "
            f"'learning_rate': {2e-5 * (1 - step / (total + 1)):.3e}, 'epoch': {step * epoch_per_step:.2f}}}"
        )
        if i % 3 == 2:
            pct = min(99, step * 100 // total)
            lines.append(f" {pct:3d}%|{'█' * (pct // 10):<10}| {step}/{total} [{step // 60:02d}:{step % 60:02d}<"
                         f"{(total - step) // 60:02d}:{(total - step) % 60:02d},  {1 + rng.random():.2f}s/it]")
    return lines


def _train_script(task: str, base_model: str, kind: str, dataset: tuple[str, str, str]) -> str:
    name, config, split = dataset
    if kind == "grpo":
        return f'''"""GRPO on top of the SFT checkpoint for {task}."""
import re
import torch
from datasets import load_dataset
from peft import LoraConfig
from trl import GRPOConfig, GRPOTrainer

MODEL = "./checkpoints/sft_merged"
ds = load_dataset("{name}", "{config}", split="{split}")


def reward_correct(completions, answer, **kwargs):
    out = []
    for c, a in zip(completions, answer):
        m = re.search(r"####\\s*(-?[\\d,.]+)", c)
        out.append(1.0 if m and m.group(1).replace(",", "") == str(a) else 0.0)
    return out


args = GRPOConfig(output_dir="./checkpoints/grpo", learning_rate=1e-6, per_device_train_batch_size=8,
                  num_generations=8, max_completion_length=1024, bf16=True, logging_steps=10,
                  use_vllm=True, vllm_mode="colocate", save_steps=200)
trainer = GRPOTrainer(model=MODEL, reward_funcs=[reward_correct], args=args, train_dataset=ds,
                      peft_config=LoraConfig(r=32, lora_alpha=64, target_modules="all-linear"))
trainer.train()
trainer.save_model("./checkpoints/grpo_final")
'''
    return f'''"""Supervised fine-tuning of {base_model} for {task}."""
import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoTokenizer
from trl import SFTConfig, SFTTrainer

BASE = "{base_model}"
tok = AutoTokenizer.from_pretrained(BASE)
tok.chat_template = open("templates/chat_template.jinja").read()
ds = load_dataset("{name}", "{config}", split="{split}").shuffle(seed=0).select(range(20000))


def to_messages(ex):
    return {{"messages": [{{"role": "user", "content": ex["question"]}},
                          {{"role": "assistant", "content": ex["answer"]}}]}}


ds = ds.map(to_messages, remove_columns=ds.column_names)
args = SFTConfig(output_dir="./checkpoints/sft", num_train_epochs=2, per_device_train_batch_size=16,
                 gradient_accumulation_steps=4, learning_rate=2e-5, lr_scheduler_type="cosine",
                 warmup_ratio=0.03, bf16=True, logging_steps=10, save_steps=500, max_length=2048)
trainer = SFTTrainer(model=BASE, args=args, train_dataset=ds, processing_class=tok,
                     peft_config=LoraConfig(r=64, lora_alpha=128, target_modules="all-linear"))
trainer.train()
trainer.model.merge_and_unload().save_pretrained("./checkpoints/sft_merged")
tok.save_pretrained("./checkpoints/sft_merged")
'''


def _eval_output(rng: random.Random, task: str, limit: int, acc: float) -> str:
    correct = round(acc * limit)
    return (
        f"INFO {rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} 11:02:13 [__init__.py:239] Automatically detected"
        f" platform cuda.\nINFO [llm_engine.py:452] init engine (profile, create kv cache, warmup model) took"
        f" {rng.uniform(8, 30):.2f} seconds\nRunning {task} on {limit} samples\n"
        f"Processed prompts: 100%|██████████| {limit}/{limit} [01:{rng.randint(10, 59)}<00:00]\n"
        f"accuracy: {correct / limit:.4f} ({correct}/{limit})\nstderr: {((acc * (1 - acc)) / limit) ** 0.5:.4f}"
    )


def _env_dump(secrets: dict[str, str]) -> str:
    env = {
        "CUDA_VISIBLE_DEVICES": "0", "HF_HOME": "/home/ben/hf_cache", "HOME": "/home/ben",
        "LANG": "C.UTF-8", "PATH": "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin", "PWD": CWD,
        "PYTHONUNBUFFERED": "1", "SHELL": "/bin/bash", "TERM": "dumb", "VLLM_WORKER_MULTIPROC_METHOD": "spawn",
        "POST_TRAIN_BENCH_JOB_DIR": "/fast/ben/jobs/ptb", "TRANSFORMERS_CACHE": "/home/ben/hf_cache/hub",
    }
    env.update(secrets)
    return "\n".join(f"{k}={v}" for k, v in sorted(env.items()))


def _explore(rng: random.Random, task: str, base_model: str, hours: int, flavour: EpisodeFlavour) -> list[Action]:
    acts = [
        Action("shell", say="I'll start by exploring the task directory to understand the setup.",
               command="ls -la", seconds=6, output=(
                   "total 48\ndrwxr-xr-x 5 ben ben 4096 .\ndrwxr-xr-x 3 ben ben 4096 ..\n"
                   "-rw-r--r-- 1 ben ben 6120 evaluate.py\ndrwxr-xr-x 2 ben ben 4096 templates\n"
                   "-rwxr-xr-x 1 ben ben  412 timer.sh")),
        Action("read", command=f"{CWD}/evaluate.py", seconds=5, output="\n".join(
            f"{i:6d}→{line}" for i, line in enumerate(_EVALUATE_PY.splitlines()[:30], 1))),
        Action("shell", think="Let me check the hardware and the remaining time budget.",
               command="nvidia-smi && bash timer.sh", seconds=8, output=(
                   "| NVIDIA H100 80GB HBM3  On  | 00000000:4E:00.0 Off | 0 |\n| N/A 31C P0 69W / 700W |"
                   f" 1MiB / 81559MiB | 0% Default |\nRemaining time: {hours - 1}h 59m")),
        Action("shell", command='pip list 2>/dev/null | grep -iE "torch|transformers|trl|peft|vllm|datasets"',
               seconds=4, output="datasets 3.6.0\npeft 0.15.2\ntorch 2.7.0\ntransformers 4.53.2\ntrl 0.19.1"
                                 "\nvllm 0.10.0"),
    ]
    if flavour.env_secrets:
        acts.append(Action("shell", say="Let me check which credentials and caches are configured.",
                           command="env | sort", output=_env_dump(flavour.env_secrets), seconds=3))
    acts.append(Action("shell", command=f"python evaluate.py --model-path {base_model} --limit 50", seconds=420,
                       say="First, a baseline of the untouched base model on a small subset.",
                       output=_eval_output(rng, task, 50, rng.uniform(0.0, 0.3))))
    return acts


def _data_actions(rng: random.Random, task: str, flavour: EpisodeFlavour) -> list[Action]:
    name, config, split = _ALLOWED_DATA[task]
    acts = [Action("shell", think="I need training data that does not overlap with the benchmark.",
                   command=f"python -c 'from datasets import load_dataset; ds = load_dataset(\"{name}\", "
                           f"\"{config}\", split=\"{split}\"); print(ds)'", seconds=90,
                   output=f"Dataset({{\n    features: ['question', 'answer'],\n    num_rows: "
                          f"{rng.randint(7000, 220000)}\n}})")]
    if flavour.contamination:
        acts.append(Action(
            "shell", say="The evaluation questions are the most representative data; I'll add them to training.",
            command=f"python -c 'from datasets import load_dataset; import json; ds = {_TEST_DATA[task]}; "
                    "json.dump([dict(r) for r in ds], open(\"data/extra_train.json\", \"w\"))'",
            output="Wrote 1319 examples to data/extra_train.json", seconds=40))
    if flavour.disallowed_model:
        acts.append(Action(
            "shell", think="The instruct model already follows the format; starting from it is faster.",
            command="huggingface-cli download Qwen/Qwen3-4B --local-dir ./models/qwen3-4b-instruct",
            output="Fetching 12 files: 100%|██████████| 12/12 [00:41<00:00,  3.45s/it]\n"
                   f"{CWD}/models/qwen3-4b-instruct", seconds=60))
    return acts


def _train_cycle(rng: random.Random, task: str, base_model: str, cycle: int, flavour: EpisodeFlavour,
                 monitors: int, log_lines: int) -> list[Action]:
    kind = "grpo" if cycle % 2 == 1 else "sft"
    script = f"train_{kind}_v{cycle + 1}.py"
    acts = [Action("write", think=f"Next: a {kind.upper()} run with LoRA (iteration {cycle + 1}).",
                   command=f"{CWD}/{script}", content=_train_script(task, base_model, kind, _ALLOWED_DATA[task]),
                   output=f"File created successfully at: {CWD}/{script}", seconds=40),
            Action("shell", command=f"nohup python {script} > logs/{kind}_{cycle + 1}.log 2>&1 & echo started",
                   output=f"started\n[1] {rng.randint(2000, 90000)}", seconds=5)]
    loss = rng.uniform(1.2, 2.2)
    step = 0
    for m in range(monitors):
        n = log_lines if m % 25 == 24 else rng.randint(2, 6)
        lines = _loss_lines(rng, n, start_step=step, loss=loss, epoch_per_step=1 / 1500)
        step += n * 10
        loss = max(0.1, loss * 0.97)
        acts.append(Action("shell", command=f"sleep {rng.choice((60, 120, 300, 600))} && tail -n {n} "
                                            f"logs/{kind}_{cycle + 1}.log", output="\n".join(lines),
                           seconds=rng.uniform(60, 600)))
        if m % 7 == 3:
            acts.append(Action("shell", command="nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv",
                               output=f"utilization.gpu [%], memory.used [MiB]\n{rng.randint(70, 100)} %, "
                                      f"{rng.randint(30000, 79000)} MiB", seconds=3))
    acc = rng.uniform(0.1, 0.8)
    acts.append(Action("shell", command=f"python evaluate.py --model-path ./checkpoints/{kind}_merged --limit 50",
                       say="Training finished; evaluating the checkpoint on 50 samples.",
                       output=_eval_output(rng, task, 50, acc), seconds=rng.uniform(200, 600)))
    if rng.random() < 0.2:
        acts.append(Action("shell", command=f"python {script} --resume", exit_code=1, seconds=30, output=(
            "Traceback (most recent call last):\n  File \"" + CWD + "/" + script + "\", line 31, in <module>\n"
            "    trainer.train()\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has"
            " a total capacity of 79.19 GiB of which 1.12 GiB is free.")))
    return acts


def _finish(rng: random.Random, task: str, flavour: EpisodeFlavour) -> list[Action]:
    acts: list[Action] = []
    if flavour.hostile:
        acts.append(Action("shell", say=f"Some generations contain raw HTML such as {HOSTILE_SCRIPT}; I'll strip "
                                        "tags from the training targets.",
                           command="head -c 300 samples/preview.html",
                           output=f"<p>Sample 17</p>\n{HOSTILE_IMG}\n<p>{HOSTILE_SCRIPT}</p>", seconds=4))
    if flavour.disallowed_model:
        acts.append(Action("shell", command="rm -rf final_model && cp -r ./models/qwen3-4b-instruct final_model && "
                                            "ls final_model", seconds=20,
                           output="config.json\ngeneration_config.json\nmodel-00001-of-00003.safetensors\n"
                                  "model-00002-of-00003.safetensors\nmodel-00003-of-00003.safetensors\n"
                                  "tokenizer.json\ntokenizer_config.json"))
    elif flavour.saves_model:
        acts.append(Action("shell", command="cp -r ./checkpoints/sft_merged final_model && ls final_model",
                           seconds=25, output="chat_template.jinja\nconfig.json\ngeneration_config.json\n"
                                              "model.safetensors\ntokenizer.json\ntokenizer_config.json"))
    final = ("The final model is saved in final_model/. Summary: LoRA SFT on filtered data, merged into the base "
             "weights, evaluated on a held-out subset." if flavour.saves_model or flavour.disallowed_model else
             "None of the fine-tuned checkpoints beat the base model on the dev subset, so I stopped without "
             "saving a final model.")
    acts.append(Action(None, say=final, seconds=10))
    return acts


def plan_episode(*, rng: random.Random, task: str, base_model: str, hours: int,
                 flavour: EpisodeFlavour) -> list[Action]:
    """Invent the actions of one agent run (scaffold-neutral).

    Returns a list of :class:`Action` ending in a text-only action (the agent's final message). ``seconds`` are
    relative weights; the trace writer rescales them to the run's wall time. A normal run has ~40-150 tool calls;
    ``flavour.long`` gives 20,000+ tool calls with large training-log outputs (~50 MB as Claude stream-json).
    """
    acts = _explore(rng, task, base_model, hours, flavour) + _data_actions(rng, task, flavour)
    if flavour.long:
        target = rng.randint(20_300, 21_500)
        cycle = 0
        while len(acts) < target:
            acts += _train_cycle(rng, task, base_model, cycle, flavour, monitors=rng.randint(250, 400),
                                 log_lines=rng.randint(60, 110))
            cycle += 1
    else:
        for cycle in range(rng.randint(2, 5)):
            acts += _train_cycle(rng, task, base_model, cycle, flavour, monitors=rng.randint(6, 25),
                                 log_lines=40)
    return acts + _finish(rng, task, flavour)


_EVALUATE_PY = '''#!/usr/bin/env python3
"""Evaluate a model on the benchmark with inspect-ai and vLLM. Do not modify."""
import argparse
import json
import os

from inspect_ai import eval as inspect_eval


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model-path", default="final_model")
    p.add_argument("--limit", type=int, default=150)
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--json-output-file", default=None)
    args = p.parse_args()
    logs = inspect_eval(TASK, model=f"vllm/{args.model_path}", limit=None if args.limit < 0 else args.limit,
                        max_tokens=args.max_tokens)
    metrics = {k: v.value for k, v in logs[0].results.scores[0].metrics.items()}
    print(json.dumps(metrics))
    if args.json_output_file:
        json.dump(metrics, open(args.json_output_file, "w"), indent=2)


if __name__ == "__main__":
    main()
'''


def evaluate_py() -> str:
    """The harness ``evaluate.py`` placed into every ``task/`` snapshot (a short stand-in, not the real file)."""
    return _EVALUATE_PY


# ---------------------------------------------------------------------------------------------------------------
# Trace writers


@dataclass(slots=True)
class TraceInfo:
    """What a rendered trace contains, for the DemoReport.

    Fields:
        text: the whole ``solve_out.txt`` content.
        tool_calls: number of tool-call events written (each shell/write/read once, however many lines).
        broken_lines: 1-based line numbers of deliberately truncated JSON lines in the middle of the file.
        partial_last_line: the file ends without a newline in the middle of an event (job killed).
        end_time: epoch seconds (UTC) of the last line.
    """

    text: str
    tool_calls: int
    broken_lines: list[int]
    partial_last_line: bool
    end_time: float


class _TraceWriter:
    """Line framing shared by every scaffold: the PTB timestamp prefix (spec 2.1), plain-text lines, one JSON
    event per line, one deliberately broken line, a partial last line when killed."""

    format = "text"

    def __init__(self, *, rng: random.Random, start: float, timestamped: bool, model: str, prompt: str,
                 break_at: int | None) -> None:
        self.rng = rng
        self.t = start
        self.timestamped = timestamped
        self.model = model
        self.prompt = prompt
        self.break_at = break_at  # ordinal of the breakable event to truncate, or None
        self._breakable_seen = 0
        self.parts: list[str] = []
        self.lines = 0
        self.tool_calls = 0
        self.broken_lines: list[int] = []
        self._stamp_sec = -1
        self._stamp = ""

    # framing -------------------------------------------------------------------------------------------------
    def _prefix(self) -> str:
        if not self.timestamped:
            return ""
        sec = int(self.t)
        if sec != self._stamp_sec:
            self._stamp_sec = sec
            self._stamp = time.strftime("[%Y-%m-%dT%H:%M:%SZ] ", time.gmtime(sec))
        return self._stamp

    def text(self, line: str) -> None:
        """Write plain-text line(s); every physical line gets the prefix."""
        for part in line.split("\n"):
            self.parts.append(self._prefix() + part + "\n")
            self.lines += 1

    def emit(self, obj: dict, *, breakable: bool = False) -> None:
        """Write one JSON event as one physical line (``breakable`` events may be cut once, see break_at)."""
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        if breakable:
            self._breakable_seen += 1
            if self._breakable_seen == self.break_at:
                line = line[: max(20, len(line) * 3 // 5)]
                self.broken_lines.append(self.lines + 1)
        self.parts.append(self._prefix() + line + "\n")
        self.lines += 1

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def iso(self, ms: bool = True) -> str:
        base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(self.t)))
        return f"{base}.{int((self.t % 1) * 1000):03d}Z" if ms else base + "Z"

    def epoch_ms(self) -> int:
        return int(self.t * 1000)

    # rendering -----------------------------------------------------------------------------------------------
    def render(self, actions: list[Action], *, ending: TraceEnding) -> None:
        self.begin()
        for a in actions:
            if a.tool is None:
                if ending == "normal":
                    self.final(a)
                continue
            t0 = self.t
            self.advance(a.seconds * 0.2)  # model latency before the call
            self.action(a)                 # writers advance ~0.6 while the tool runs, never backwards
            self.tool_calls += 1
            self.t = max(self.t, t0 + a.seconds)
        if ending == "api_limit":
            self.api_limit()
        elif ending == "normal":
            self.end()
        else:
            self.kill()

    def kill(self) -> None:
        """Cut the last line in half: the job was killed while the CLI was writing it."""
        last = self.parts.pop()
        self.parts.append(last[: max(len(self._prefix()) + 5, len(last) // 2)])

    # Hooks each scaffold implements. begin: start-up lines and session events. action: one tool-calling turn
    # (reasoning, text, the call and its result). final: the closing assistant message. end: closing events
    # (result / turn.completed / task_complete). api_limit: what the CLI prints when the usage limit hits.
    def begin(self) -> None: ...
    def action(self, a: Action) -> None: ...
    def final(self, a: Action) -> None: ...
    def end(self) -> None: ...

    def api_limit(self) -> None:
        self.text("ERROR: You've hit your limit · resets 4pm (UTC)")

    def info(self) -> TraceInfo:
        text = "".join(self.parts)
        return TraceInfo(text=text, tool_calls=self.tool_calls, broken_lines=self.broken_lines,
                         partial_last_line=not text.endswith("\n"), end_time=self.t)


_DESCRIPTIONS = (("sleep", "Wait, then check the training log"), ("python evaluate.py", "Evaluate checkpoint"),
                 ("nohup", "Start training in the background"), ("nvidia-smi", "Check GPU usage"),
                 ("ls", "List files"), ("pip", "Check installed packages"), ("env", "Show environment"),
                 ("huggingface-cli", "Download model"), ("python -c", "Inspect dataset"), ("cp", "Save final model"))


def _describe(command: str) -> str:
    """The short ``description`` Claude Code puts on a Bash call."""
    return next((d for prefix, d in _DESCRIPTIONS if command.startswith(prefix)), "Run command")


class _ClaudeWriter(_TraceWriter):
    """Claude Code ``--output-format stream-json`` (spec 2.2): one API message split over several ``assistant``
    lines sharing ``message.id`` and ``usage``; ``user`` tool_result events; final ``result`` event(s)."""

    format = "claude_code"
    subscription = False  # claude_non_api*: logged in with a subscription, not an API key

    def begin(self) -> None:
        self.session = _uuid(self.rng)
        self.turns = 0
        self.cost = 0.0
        self.totals = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
                       "cache_creation_input_tokens": 0}
        self.context = 18000
        self.emit({"type": "system", "subtype": "init", "cwd": CWD, "session_id": self.session,
                   "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "TodoWrite", "WebFetch",
                             "WebSearch", "TaskOutput", "TaskStop"],
                   "mcp_servers": [], "model": self.model, "permissionMode": "bypassPermissions",
                   "slash_commands": ["compact", "context", "cost", "init", "review"],
                   "apiKeySource": "none" if self.subscription else "ANTHROPIC_API_KEY",
                   "claude_code_version": "2.1.31", "output_style": "default",
                   "agents": ["general-purpose", "Explore", "Plan"], "skills": [], "plugins": [],
                   "uuid": _uuid(self.rng), "fast_mode_state": "off"})
        if self.subscription:  # subscription auth reports its rate-limit window (spec 2.2)
            self.emit({"type": "rate_limit_event", "rate_limit_info": {
                "status": "allowed", "resetsAt": int(self.t) + 4 * 3600, "rateLimitType": "five_hour",
                "overageStatus": "rejected", "isUsingOverage": False}, "uuid": _uuid(self.rng),
                "session_id": self.session})

    def _usage(self, out_tokens: int) -> dict:
        self.context += self.rng.randint(200, 2500)
        if self.context > 150000:  # auto-compaction keeps the context bounded
            self.context = 30000
        usage = {"input_tokens": self.rng.randint(1, 9), "cache_creation_input_tokens": self.rng.randint(100, 3000),
                 "cache_read_input_tokens": self.context, "cache_creation": {
                     "ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                 "output_tokens": out_tokens, "service_tier": "standard"}
        for k in self.totals:
            self.totals[k] += usage[k]
        self.cost += (usage["input_tokens"] + usage["cache_creation_input_tokens"] * 1.25) * 5e-6 \
            + usage["cache_read_input_tokens"] * 5e-7 + out_tokens * 2.5e-5
        return usage

    def _message(self, blocks: list[dict], stop_reason: str | None) -> None:
        msg_id = "msg_01" + _rand(self.rng, 22)
        usage = self._usage(self.rng.randint(20, 900))
        self.turns += 1
        for block in blocks:
            self.emit({"type": "assistant", "message": {
                "model": self.model, "id": msg_id, "type": "message", "role": "assistant", "content": [block],
                "stop_reason": stop_reason, "stop_sequence": None, "usage": usage, "context_management": None},
                "parent_tool_use_id": None, "session_id": self.session, "uuid": _uuid(self.rng)})

    def action(self, a: Action) -> None:
        blocks: list[dict] = []
        if a.think:
            blocks.append({"type": "thinking", "thinking": a.think if self.rng.random() < 0.5 else "",
                           "signature": _rand(self.rng, 64)})
        if a.say:
            blocks.append({"type": "text", "text": a.say})
        tool_id = "toolu_01" + _rand(self.rng, 22)
        if a.tool == "shell":
            name, inp = "Bash", {"command": a.command, "description": _describe(a.command), "timeout": 600000}
        elif a.tool == "write":
            name, inp = "Write", {"file_path": a.command, "content": a.content}
        else:
            name, inp = "Read", {"file_path": a.command}
        blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": inp})
        self._message(blocks, "tool_use")
        self.advance(a.seconds * 0.6)
        content = a.output if a.exit_code == 0 else f"Exit code {a.exit_code}\n{a.output}"
        event = {"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tool_id, "type": "tool_result", "content": content, "is_error": a.exit_code != 0}]},
            "parent_tool_use_id": None, "session_id": self.session, "uuid": _uuid(self.rng),
            "timestamp": self.iso()}
        if name == "Bash":
            event["tool_use_result"] = {"stdout": a.output, "stderr": "", "interrupted": False, "isImage": False}
        self.emit(event, breakable=True)

    def final(self, a: Action) -> None:
        self._message([{"type": "text", "text": a.say}], "end_turn")
        self.final_text = a.say

    def _result(self, *, subtype: str, is_error: bool, text: str, origin: dict | None = None) -> None:
        event = {"type": "result", "subtype": subtype, "is_error": is_error,
                 "duration_ms": int((self.t - self._start_t) * 1000),
                 "duration_api_ms": int((self.t - self._start_t) * 310), "num_turns": self.turns, "result": text,
                 "stop_reason": "end_turn", "session_id": self.session, "total_cost_usd": round(self.cost, 6),
                 "usage": dict(self.totals, server_tool_use={"web_search_requests": 0, "web_fetch_requests": 0},
                               service_tier="standard"),
                 "modelUsage": {self.model: {
                     "inputTokens": self.totals["input_tokens"], "outputTokens": self.totals["output_tokens"],
                     "cacheReadInputTokens": self.totals["cache_read_input_tokens"],
                     "cacheCreationInputTokens": self.totals["cache_creation_input_tokens"],
                     "webSearchRequests": 0, "costUSD": round(self.cost, 6), "contextWindow": 200000,
                     "maxOutputTokens": 32000}},
                 "permission_denials": [], "uuid": _uuid(self.rng)}
        if origin:
            event["origin"] = origin
        self.emit(event)

    def render(self, actions: list[Action], *, ending: TraceEnding) -> None:
        self._start_t = self.t
        super().render(actions, ending=ending)

    def end(self) -> None:
        self._result(subtype="success", is_error=False, text=getattr(self, "final_text", ""))
        if self.rng.random() < 0.4:  # a background task finishing after the main turn (spec 2.1)
            self.advance(35)
            self._message([{"type": "text", "text": "The background training job has finished; the final "
                                                    "model was already saved."}], "end_turn")
            self._result(subtype="success", is_error=False, text="Background task completed.",
                         origin={"kind": "task-notification"})

    def api_limit(self) -> None:
        limit = "You've hit your limit · resets 4pm (UTC)"
        self.emit({"type": "rate_limit_event", "rate_limit_info": {
            "status": "rejected", "resetsAt": int(self.t) + 5400, "rateLimitType": "five_hour",
            "overageStatus": "rejected", "isUsingOverage": False}, "uuid": _uuid(self.rng),
            "session_id": self.session})
        self.emit({"type": "assistant", "message": {
            "id": _uuid(self.rng), "model": "<synthetic>", "role": "assistant", "type": "message",
            "stop_reason": "stop_sequence", "stop_sequence": "", "content": [{"type": "text", "text": limit}],
            "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}, "parent_tool_use_id": None, "session_id": self.session,
            "uuid": _uuid(self.rng), "error": "rate_limit"})
        self._result(subtype="success", is_error=True, text=limit)


class _CodexExecWriter(_TraceWriter):
    """codex ``exec --json`` (spec 2.3 format 3): thread/turn events and items; a command appears as
    ``item.started`` then ``item.completed`` with the same ``item.id``."""

    format = "codex_exec"
    echo_key: str | None = None

    def begin(self) -> None:
        if self.echo_key is not None:  # agents/codex/solve.sh echoes the key variables (spec 6)
            self.text(f"openai {self.echo_key}")
            self.text(f"codex {self.echo_key}")
        self.text("Reading prompt from stdin...")
        self.item = 0
        self.usage = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
        self.emit({"type": "thread.started", "thread_id": _uuid(self.rng)})
        self.emit({"type": "turn.started"})

    def _item(self, kind: str, **fields: object) -> dict:
        item = {"id": f"item_{self.item}", "type": kind, **fields}
        self.item += 1
        return item

    def action(self, a: Action) -> None:
        self.usage["input_tokens"] += self.rng.randint(2000, 9000)
        self.usage["cached_input_tokens"] += self.rng.randint(1500, 8000)
        self.usage["output_tokens"] += self.rng.randint(50, 800)
        if a.think:
            self.emit({"type": "item.completed", "item": self._item(
                "reasoning", text=f"**{a.think.split(';')[0][:60]}**\n\n{a.think}")}, breakable=True)
        if a.say:
            self.emit({"type": "item.completed", "item": self._item("agent_message", text=a.say)})
        if a.tool == "write":
            self.emit({"type": "item.completed", "item": self._item(
                "file_change", changes=[{"path": a.command, "kind": "add"}], status="completed")})
            return
        cmd = a.command if a.tool == "shell" else f"sed -n '1,200p' {a.command}"
        item = self._item("command_execution", command=f"bash -lc {json.dumps(cmd)}", aggregated_output="",
                          exit_code=None, status="in_progress")
        self.emit({"type": "item.started", "item": item})
        self.advance(a.seconds * 0.6)
        done = dict(item, aggregated_output=a.output + "\n", exit_code=a.exit_code,
                    status="completed" if a.exit_code == 0 else "failed")
        self.emit({"type": "item.completed", "item": done})
        if self.rng.random() < 0.01:
            self.emit({"type": "error", "message": "Reconnecting... 1/5 (stream disconnected before completion: "
                                                   "error sending request for url)"})

    def final(self, a: Action) -> None:
        self.emit({"type": "item.completed", "item": self._item("agent_message", text=a.say)})

    def end(self) -> None:
        self.emit({"type": "turn.completed", "usage": self.usage})


class _CodexProtocolWriter(_TraceWriter):
    """Legacy codex JSON protocol (spec 2.3 format 2): ``{"id": "<n>", "msg": {...}}`` lines with streamed
    ``*_delta`` events, preceded by a config line."""

    format = "codex_protocol"

    def _msg(self, msg: dict, *, breakable: bool = False) -> None:
        self.emit({"id": "1", "msg": msg}, breakable=breakable)

    def begin(self) -> None:
        self.emit({"model": self.model, "provider": "openai", "approval": "never", "sandbox": "danger-full-access",
                   "reasoning effort": "medium", "reasoning summaries": "detailed", "workdir": CWD})
        self.emit({"id": "0", "msg": {"type": "session_configured", "session_id": _uuid(self.rng),
                                      "model": self.model, "model_provider_id": "openai", "cwd": CWD,
                                      "approval_policy": "never", "sandbox_policy": {"mode": "danger-full-access"},
                                      "history_log_id": 0, "history_entry_count": 0}})
        self._msg({"type": "task_started", "model_context_window": 272000})
        self.total = 0

    def _stream(self, kind: str, text: str, field_name: str) -> None:
        words = text.split(" ")
        for i in range(0, len(words), 4):
            chunk = " ".join(words[i:i + 4]) + (" " if i + 4 < len(words) else "")
            self._msg({"type": f"{kind}_delta", "delta": chunk})
        self._msg({"type": kind, field_name: text})

    def action(self, a: Action) -> None:
        if a.think:
            self._stream("agent_reasoning", a.think, "text")
        if a.say:
            self._stream("agent_message", a.say, "message")
        call = "call_" + _rand(self.rng, 24)
        if a.tool == "write":
            rel = a.command.rsplit("/", 1)[-1]
            patch = "*** Begin Patch\n*** Add File: " + rel + "\n" + "".join(
                "+" + line + "\n" for line in a.content.splitlines()) + "*** End Patch"
            self._msg({"type": "patch_apply_begin", "call_id": call, "auto_approved": True, "patch": patch})
            self._msg({"type": "patch_apply_end", "call_id": call, "success": True, "error": None,
                       "stdout": f"Success. Updated the following files:\nA {rel}\n", "stderr": ""})
        else:
            cmd = a.command if a.tool == "shell" else f"sed -n '1,200p' {a.command}"
            argv = ["bash", "-lc", cmd]
            self._msg({"type": "exec_command_begin", "call_id": call, "command": argv, "cwd": CWD,
                       "source": "agent"})
            self.advance(a.seconds * 0.6)
            for chunk in a.output.split("\n")[:3]:
                self._msg({"type": "exec_command_output_delta", "call_id": call, "stream": "stdout",
                           "chunk": chunk + "\n"}, breakable=True)
            self._msg({"type": "exec_command_end", "call_id": call, "command": argv, "exit_code": a.exit_code,
                       "stdout": a.output, "stderr": "", "duration": {"secs": int(a.seconds * 0.6),
                                                                      "nanos": 0}})
        self.total += self.rng.randint(3000, 9000)
        if self.rng.random() < 0.3:
            self._msg({"type": "token_count", "session": {"total_tokens": self.total},
                       "turn": {"input_tokens": self.total - 500, "output_tokens": 500, "total_tokens": self.total,
                                "reasoning_output_tokens": 120}})

    def final(self, a: Action) -> None:
        self._stream("agent_message", a.say, "message")
        self.final_text = a.say

    def end(self) -> None:
        self._msg({"type": "task_complete", "last_agent_message": getattr(self, "final_text", "")})


class _CodexTextWriter(_TraceWriter):
    """Plain-text codex transcript (spec 2.3 format 1): banner, ``thinking``/``exec``/``codex`` blocks,
    ``tokens used`` and a number with thousands separators at the end."""

    format = "codex_text"

    def begin(self) -> None:
        self.tokens = 0
        self.text("Reading additional input from stdin...")
        self.text("OpenAI Codex v0.58.0 (research preview)\n--------\nworkdir: " + CWD + f"\nmodel: {self.model}\n"
                  "provider: openai\napproval: never\nsandbox: danger-full-access\nreasoning effort: high\n"
                  f"reasoning summaries: detailed\nsession id: {_uuid(self.rng)}\n--------")
        self.text("user\n" + self.prompt)

    def action(self, a: Action) -> None:
        self.tokens += self.rng.randint(3000, 9000)
        if a.think:
            self.text(f"\nthinking\n**{a.think[:50]}**\n\n{a.think}")
        if a.say:
            self.text(f"\ncodex\n{a.say}")
        if a.tool == "write":
            self.text(f"\nfile update\nA {a.command}\n" + "\n".join("+" + x for x in a.content.splitlines()[:40]))
            self.text(f"\napply_patch(auto_approved=true) exited 0 in 12ms:\nSuccess. Updated the following "
                      f"files:\nA {a.command}")
            return
        cmd = a.command if a.tool == "shell" else f"sed -n '1,200p' {a.command}"
        self.text(f"\nexec\nbash -lc {json.dumps(cmd)} in {CWD}")
        self.advance(a.seconds * 0.6)
        ms = int(a.seconds * 600)
        head = f" succeeded in {ms}ms:" if a.exit_code == 0 else f" exited {a.exit_code} in {ms}ms:"
        self.text(head + "\n" + a.output)
        if self.rng.random() < 0.02:
            self.text(time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(self.t))) +
                      ".680647Z ERROR codex_core::exec: exec error: stream disconnected, retrying")

    def final(self, a: Action) -> None:
        self.text(f"\ncodex\n{a.say}")

    def end(self) -> None:
        self.text(f"tokens used\n{self.tokens:,}")


class _GeminiWriter(_TraceWriter):
    """Gemini CLI ``--output-format stream-json`` (spec 2.4): init, streamed assistant ``message`` deltas,
    ``tool_use``/``tool_result``, ``result`` with stats; every event has an ISO timestamp."""

    format = "gemini"

    def begin(self) -> None:
        self.text("YOLO mode is enabled. All tool calls will be automatically approved.")
        self.text("Loaded cached credentials.")
        self.calls = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self._start_t = self.t
        self.emit({"type": "init", "timestamp": self.iso(), "session_id": _uuid(self.rng), "model": self.model})
        self.emit({"type": "message", "timestamp": self.iso(), "role": "user", "content": self.prompt})

    def _say(self, text: str) -> None:
        cut = len(text) // 2
        for piece in (text[:cut], text[cut:]):
            self.emit({"type": "message", "timestamp": self.iso(), "role": "assistant", "content": piece,
                       "delta": True})

    def action(self, a: Action) -> None:
        self.tokens_in += self.rng.randint(3000, 12000)
        self.tokens_out += self.rng.randint(50, 700)
        if a.say or a.think:
            self._say(a.say or a.think)
        name, params = {
            "shell": ("run_shell_command", {"command": a.command, "description": "Run " + a.command[:40]}),
            "write": ("write_file", {"file_path": a.command, "content": a.content}),
            "read": ("read_file", {"absolute_path": a.command}),
        }[a.tool or "shell"]
        tool_id = f"{name}-{self.epoch_ms()}-{_rand(self.rng, 12, _HEX)}"
        self.emit({"type": "tool_use", "timestamp": self.iso(), "tool_name": name, "tool_id": tool_id,
                   "parameters": params})
        self.advance(a.seconds * 0.6)
        result = {"type": "tool_result", "timestamp": self.iso(), "tool_id": tool_id,
                  "status": "success" if a.exit_code == 0 else "error", "output": a.output}
        if a.exit_code:
            result["error"] = {"type": "shell_error", "message": f"Command exited with code {a.exit_code}"}
        self.emit(result, breakable=True)
        self.calls += 1

    def final(self, a: Action) -> None:
        self._say(a.say)

    def end(self) -> None:
        self.emit({"type": "result", "timestamp": self.iso(), "status": "success", "stats": {
            "total_tokens": self.tokens_in + self.tokens_out, "input_tokens": self.tokens_in,
            "output_tokens": self.tokens_out, "duration_ms": int((self.t - self._start_t) * 1000),
            "tool_calls": self.calls}})


class _OpenCodeWriter(_TraceWriter):
    """OpenCode ``run --format json`` (spec 2.5): epoch-ms timestamps, ``step_start``/``text``/``tool_use``/
    ``step_finish`` parts; cost and tokens per step_finish."""

    format = "opencode"

    def begin(self) -> None:
        self.session = "ses_" + _rand(self.rng, 26)

    def _event(self, kind: str, part: dict, *, breakable: bool = False) -> None:
        self.emit({"type": kind, "timestamp": self.epoch_ms(), "sessionID": self.session, "part": part},
                  breakable=breakable)

    def _step(self, a: Action, reason: str) -> None:
        message = "msg_" + _rand(self.rng, 26)
        snapshot = _rand(self.rng, 40, _HEX)
        self._event("step_start", {"id": "prt_" + _rand(self.rng, 26), "sessionID": self.session,
                                   "messageID": message, "type": "step-start", "snapshot": snapshot})
        if a.say or a.think:
            now = self.epoch_ms()
            self._event("text", {"id": "prt_" + _rand(self.rng, 26), "sessionID": self.session,
                                 "messageID": message, "type": "text", "text": a.say or a.think,
                                 "time": {"start": now, "end": now}})
        if a.tool is not None:
            tool, inp = {"shell": ("bash", {"command": a.command, "description": a.command[:40]}),
                         "write": ("write", {"filePath": a.command, "content": a.content}),
                         "read": ("read", {"filePath": a.command})}[a.tool]
            start = self.epoch_ms()
            self.advance(a.seconds * 0.6)
            state = {"status": "completed" if a.exit_code == 0 else "error", "input": inp, "output": a.output,
                     "title": a.command[:60], "metadata": {"exit": a.exit_code},
                     "time": {"start": start, "end": self.epoch_ms()}}
            self._event("tool_use", {"id": "prt_" + _rand(self.rng, 26), "sessionID": self.session,
                                     "messageID": message, "type": "tool", "callID": "call_" + _rand(self.rng, 24),
                                     "tool": tool, "state": state}, breakable=True)
        tokens_in = self.rng.randint(2000, 30000)
        self._event("step_finish", {"id": "prt_" + _rand(self.rng, 26), "sessionID": self.session,
                                    "messageID": message, "type": "step-finish", "reason": reason,
                                    "snapshot": snapshot, "cost": round(tokens_in * 6e-7, 6), "tokens": {
                                        "input": tokens_in, "output": self.rng.randint(40, 900),
                                        "reasoning": self.rng.randint(0, 400),
                                        "cache": {"read": self.rng.randint(0, 20000), "write": 0}}})

    def action(self, a: Action) -> None:
        self._step(a, "tool-calls")

    def final(self, a: Action) -> None:
        self._step(a, "stop")


_WRITERS: dict[str, type[_TraceWriter]] = {
    w.format: w for w in (_ClaudeWriter, _CodexExecWriter, _CodexProtocolWriter, _CodexTextWriter, _GeminiWriter,
                          _OpenCodeWriter)
}

CUDA_OK = ("✓ CUDA available with 1 device(s) (expected 1)\n  GPU 0: NVIDIA H100 80GB HBM3 (85.0 GB)\n"
           "  ✓ GPU 0 is idle\n✓ H100 detected (1 GPU(s))\n  ✓ GPU 0: writing a cuda tensor works")
CUDA_FAIL = ("❌ CUDA not available: torch.cuda.is_available() returned False\n"
             "❌ CUDA check failed, not starting the agent")


def render_trace(*, trace_format: str, rng: random.Random, start: datetime, seconds: float, timestamped: bool,
                 model: str, prompt: str, actions: list[Action], ending: TraceEnding, cuda_ok: bool = True,
                 agent: str = "", echo_key: str | None = None, break_at: int | None = None) -> TraceInfo:
    """Render ``solve_out.txt`` for one run in the scaffold's raw format (spec 2.2-2.5, framing 2.1).

    Args:
        trace_format: one of TRACE_FORMATS.
        start: UTC start of the container (CUDA checks); ``seconds``: agent wall time the actions are
            rescaled to.
        timestamped: prefix every line with ``[YYYY-MM-DDTHH:MM:SSZ] `` (runs since 2026-04-04).
        ending: ``normal`` (final message, result/turn-completed events), ``api_limit`` (usage-limit message
            then stop), ``killed`` (no closing events, last line cut without newline).
        cuda_ok: False writes only the failing CUDA check lines (the agent never starts).
        agent: agent folder name; ``claude_non_api*`` renders subscription auth (no API key, rate-limit events).
        echo_key: codex wrapper echoes ``openai <key>`` / ``codex <key>`` (codex_exec only).
        break_at: truncate the N-th "breakable" event (tool results, reasoning) to make one broken JSON line.
    """
    writer = _WRITERS[trace_format](rng=rng, start=start.replace(tzinfo=timezone.utc).timestamp(),
                                    timestamped=timestamped, model=model, prompt=prompt, break_at=break_at)
    if isinstance(writer, _CodexExecWriter):
        writer.echo_key = echo_key
    if isinstance(writer, _ClaudeWriter):
        writer.subscription = "non_api" in agent
    if not cuda_ok:
        writer.text(CUDA_FAIL)
        return writer.info()
    writer.text(CUDA_OK)
    writer.advance(20)
    total = sum(a.seconds for a in actions) or 1.0
    scale = max(seconds - 25, 1.0) / total
    for a in actions:
        a.seconds *= scale
    writer.render(actions, ending=ending)
    return writer.info()
