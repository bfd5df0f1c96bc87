"""Everything the trace rules derive from a results tree, as plain JSON: the frozen snapshot that
``tests/test_rules_equivalence.py`` compares the current rules with.

Per run (``method/run_dir``), exactly what the ingest stores from the rules (``Ingester.parse_run``, nothing
written): the ``facets`` rows (facet, value, value_num, cited steps), the ``phases`` rows (phase, start_s, end_s,
step_from, step_to), the evidence marks of every marked step (``"trace:index" -> "rule,rule"``, the steps
table's ``suspicious`` column), and ``call_phases``: the phase of every stored tool call as the run page's
timeline classifies it (``traces.vocabulary.call_phase`` on the stored, capped input), one letter per call
(d/t/e/o). Redaction uses the shape rules only (no environment secrets), so the snapshot does not depend on the
machine.

The demo tree says little about the rare rules (3 evidence marks in 68 runs), so :func:`fuzz_analysis` adds a
seeded corpus: episodes of tool calls whose texts and outputs are random joins of the rules' trigger phrases and
near misses (separators, case changes, JSON file writes, patches, unpaired results, non-ASCII neighbours), with
every facet, phase, evidence mark and call phase of each. The corpus is a function of the seed: editing
:data:`CALL_FRAGMENTS` or :data:`OUTPUT_FRAGMENTS` changes it, so regenerate the fixture with the code *before*
a rule change, then change the rule.

Regenerate (only when a rule changes on purpose, and say so in the commit)::

    .venv/bin/python -m tests.analysis_snapshot --runs 12 --seed 12 --no-long-run \\
        tests/fixtures/rules_demo_12_12.json.gz
    .venv/bin/python -m tests.analysis_snapshot --runs 12 --seed 1 --long-run-only tests/fixtures/rules_long_run.json.gz
    .venv/bin/python -m tests.analysis_snapshot --fuzz 2000 --seed 15 tests/fixtures/rules_fuzz.json.gz
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path


def tree_analysis(root: Path, *, only: set[str] | None = None) -> dict[str, dict]:
    """``{"method/run_dir": {"facets": [...], "phases": [...], "evidence": {...}, "call_phases": "..."}}`` for
    every run of the tree that parses (``only``: just these ``method/run_dir`` keys); runs that fail to parse
    are listed with their error message under ``"error"``."""
    from ingest.reader import Ingester, RunIngestError
    from ingest.redaction import Redactor
    from traces import layout, vocabulary

    ingester = Ingester(suite_id="posttrainbench", redactor=Redactor(), synthetic=True)
    out: dict[str, dict] = {}
    for method_dir in sorted(p for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        baseline = layout.is_baseline_dir(method_dir.name)
        if baseline:
            method = layout.MethodName(method_dir.name, "baseline", "", 0.0, 1, "", "none", None)
        else:
            try:
                method = layout.parse_method_name(method_dir.name)
            except layout.LayoutError:
                continue
        for run_dir in sorted(p for p in method_dir.iterdir() if p.is_dir()):
            key = f"{method_dir.name}/{run_dir.name}"
            if only is not None and key not in only:
                continue
            try:
                rows = ingester.parse_run(method, run_dir, baseline=baseline)
            except (layout.LayoutError, RunIngestError) as exc:
                out[key] = {"error": str(exc).replace(str(root), "<root>")}
                continue
            steps = rows.steps
            out[key] = {
                "facets": [[f.facet, f.value, f.value_num, f.steps] for f in rows.facets],
                "phases": [[p.phase, p.start_s, p.end_s, p.step_from, p.step_to] for p in rows.phases],
                "evidence": {f"{s.trace}:{s.idx}": s.suspicious for s in steps if s.suspicious},
                "call_phases": "".join(
                    vocabulary.call_phase(_step(s).input)[0] for s in steps if s.kind == "tool_call"),
            }
    return out


def _step(row):
    from traces.steps import Step

    return Step(row.idx, "tool_call", tool=row.tool, input=row.input)


# Trigger phrases of every rule (ingest/facets.py, ingest/evidence.py docstrings) and near misses.
CALL_FRAGMENTS = (
    "ls -la", "cat evaluate.py", "nvidia-smi", "pip install trl peft", "echo done", "sleep 600", "tail -n 5 logs/sft_1.log",
    "python evaluate.py --model-path final_model --limit 50", "lm_eval --tasks gsm8k", "lm-eval --model hf",
    "inspect eval task.py", "lighteval accelerate", "python my_eval.py", "python run_eval_v2.py", "evaluate.pyc",
    "python train.py", "python3 train_sft.py", "accelerate launch --config_file a.yaml train_grpo.py",
    "accelerate launch --config_file a.yaml run.py", "torchrun --nproc_per_node 1 train_full.py", "deepspeed sft.py",
    "nohup python train_sft_v1.py > logs/sft_1.log 2>&1 &", "python -u scripts/finetune_lora.py", "python distill_kd.py",
    "python fine_tune.py", "python dpo_train.py", "python ppo_run.py", "python my_ppo_v2.py", "python -O grpo.py",
    "llamafactory-cli train cfg.yaml", "axolotl train cfg.yml", "python -m axolotl.cli.train", "tune run lora_finetune",
    "python -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.rollout.n=5",
    "python -m verl.trainer.main_ppo algorithm.adv_estimator=gae", "adv_estimator=rloo", "adv_estimator=remax",
    "adv_estimator=reinforce_plus_plus", "python -m openrlhf.cli.train_ppo", "trl sft --model x", "trl grpo",
    "trl dpo", "trl ppo", "vllm serve Qwen/Qwen3-4B-Base", "use_vllm=True", "use_vllm = False",
    "trainer = Trainer(model=model)", "trainer.train()", "SFTTrainer(", "SFTConfig(output_dir='o')",
    "stage: sft", "stage: dpo", "DataCollatorForCompletionOnlyLM", "Seq2SeqTrainer", "finetuning_type: lora",
    "finetuning_type: full", "LoraConfig(r=16)", "get_peft_model(model, cfg)", "--use_peft", "--lora_r 16",
    "lora_r = 8", "load_in_4bit=True", "load_in_4bit = False", "BitsAndBytesConfig(", "--load_in_4bit",
    "bnb_4bit_quant_type='nf4'", "QLoRA", "qlora", "GRPOTrainer(", "GRPOConfig(num_generations=8)",
    "PPOTrainer", "PPOConfig", "DPOTrainer", "ORPOConfig", "KTOTrainer", "CPOConfig", "RLOOTrainer",
    "OnlineDPOTrainer", "XPOConfig", "NashMDTrainer", "REINFORCE", "reinforce", "from openai import OpenAI",
    "client = OpenAI()", "import anthropic", "anthropic.Anthropic()", "genai.Client(api_key=k)",
    "curl https://api.anthropic.com/v1/messages", "https://openrouter.ai/api", "api.together.xyz",
    "api.deepseek.com", "dashscope.aliyuncs.com", "generativelanguage.googleapis.com", "teacher_model = 'x'",
    "teacher", "distillation", "def generate_boards(n):", "def make_data():", "def synth_examples(k):",
    "def create(", "solver", "synthetic", "itertools.product(range(3), repeat=4)", "curriculum", "easy-to-hard",
    "easy to hard", "by difficulty", "difficulty_level", "difficulty_schedule", "sorted(xs, key=difficulty)",
    "from trl import SFTTrainer", "import peft", "from unsloth import FastLanguageModel", "import verl",
    "from openrlhf import x", "import axolotl", "from llamafactory import y", "import torchtune", "import deepspeed",
    "from vllm import LLM", "from transformers import AutoModel", "import accelerate", "import bitsandbytes as bnb",
    "(import trl)", "x;import trl", "'from peft import'", "pip install transformers", "transformers.__version__",
    "load_dataset(\"openai/gsm8k\", \"main\", split=\"train\")", "load_dataset('openai/gsm8k', split='test')",
    "load_dataset(path='Idavidrein/gpqa')", "load_dataset(\"json\", data_files=\"data/train.jsonl\")",
    "load_dataset('ise-uiuc/Magicoder-OSS-Instruct-75K')", "load_dataset(\"openai_humaneval\")",
    "huggingface-cli download openai/gsm8k --repo-type dataset --local-dir d",
    "hf download HuggingFaceH4/MATH-500 --repo-type=dataset", "huggingface-cli download Qwen/Qwen3-4B-Base",
    "huggingface-cli download Qwen/Qwen3-4B --local-dir ./models/qwen3-4b-instruct",
    "snapshot_download(repo_id='openai/gsm8k', repo_type='dataset')",
    "snapshot_download(repo_type=\"dataset\", repo_id=\"open-r1/OpenR1-Math-220k\")",
    "snapshot_download('Qwen/Qwen3-1.7B')", "hf_hub_download(repo_id='openai/openai_humaneval', filename='t')",
    "wget https://huggingface.co/datasets/openai/openai_humaneval/resolve/main/test.parquet",
    "curl -L -o x https://example.com/gsm8k/test.jsonl", "from datasets import load_dataset", "import datasets",
    "tokenizer(batch)", "tokenise", "python prepare_data.py", "python gen_data.py", "build_dataset()",
    "generate_examples()", "head data/train.jsonl", "out.parquet", "x.csv", "notes.json", "split = 'test'",
    "split=\"validation+test\"", "test.jsonl", "test.parquet", "test.csv", "split='train'",
    "AutoModelForCausalLM.from_pretrained('meta-llama/Llama-3.1-8B-Instruct')", "google/gemma-3-4b-it",
    "Qwen/Qwen3-4B", "Qwen/Qwen3-4B-Base", "HuggingFaceTB/SmolLM3-3B", "org/model-chat", "org/Model-Chat-v2",
    "sed -i 's/limit=150/limit=5/' evaluate.py", "cp my.py evaluate.py", "mv templates/ old/", "rm -rf templates/",
    "echo x >> evaluate.py", "tee templates/qwen.jinja", "cat > evaluate.py", "patch -p1 evaluate.py",
    "num_generations=8", "--num_generations 4", "rollout.n=16", "n_samples_per_prompt: 6", "rollouts per step: 8",
    "NUM_GENERATIONS = 12", "sft_data.json", "train.log", "grpo_run.sh", "dpo.out", "finetune.py", "ppo.py",
    "é SFTTrainer", "éLoraConfig", "ﬁnetune.py", "ＳＦＴTrainer", "İmport trl", "K", "naïve_train.py",
)
OUTPUT_FRAGMENTS = (
    "", "ok", "{'loss': 1.2}", " 10/100 [00:10<01:30]", "{'loss': 0.01, 'reward': 0.41, 'step': 40}",
    "step:12 - critic/rewards/mean:0.31", "global_step=300 reward=0.5", "step 77 reward 0.2", "Reward: 0.3 step: 9",
    "'step': 1,200 reward", " 80/200 [10:00<15:00]", "reward_std 0.1", "Generated 500 boards",
    "Wrote 1,200 examples to data/train.jsonl", "saved 30 training samples", "creating 4 pairs",
    "generating 12 synthetic problems", "wrote 7 new puzzles", "num_generations=8", "rollouts per step: 4",
    "rollout.n = 3", "accuracy: 0.41", "Accuracy: 41.2%", "accuracy  0.412", '{"accuracy": 0.25}', "pass@4: 0.35",
    "win rate 63.5", "|gsm8k|exact_match|↑|0.3100|±|0.0127|", "score = 150", "acc=0.9", "val/acc: 77",
    "stderr 0.02", "Traceback: CUDA out of memory", "File created successfully", "load_dataset('openai/gsm8k')",
    "from openai import OpenAI", "You've hit your limit", "ÀCCURACY: 0.5", "scoré: 0.7",
)
_TOOLS = ("Bash", "Bash", "Bash", "shell", "run_shell_command", "exec_command", "Write", "Write", "Edit",
          "write_file", "apply_patch", "file_change", "Read", "Grep")
_PATHS = ("/home/ben/task/train_sft.py", "/home/ben/task/evaluate.py", "/home/ben/task/templates/qwen.jinja",
          "/home/ben/task/gen_data.py", "/home/ben/task/my_eval.py", "/home/ben/task/notes.md", "data/x.jsonl",
          "/home/ben/task/grpo_train.py")
_SEPARATORS = ("\n", " ", "; ", " && ", " | ", "", "\\n", '\\"', "\n\n", " # ", "(", ",")
FUZZ_CONTEXTS = {"gsm8k": (("openai/gsm8k", "gsm8k"), ("Qwen/Qwen3-4B", "google/gemma-3-4b-it")),
                 "humaneval": (("openai/openai_humaneval", "openai_humaneval", "humaneval"), ("Qwen/Qwen3-1.7B",))}


def _fuzz_text(rng: random.Random, fragments: tuple[str, ...], most: int) -> str:
    parts = [rng.choice(fragments) for _ in range(rng.randint(1, most))]
    text = ""
    for part in parts:
        text += rng.choice(_SEPARATORS) + part if text else part
    roll = rng.random()
    return text.upper() if roll < 0.05 else text.lower() if roll < 0.1 else text


def fuzz_episode(rng: random.Random):
    """One random episode as ``traces.steps.Step`` objects: 1-8 tool calls (with assistant chatter naming
    methods, which the rules must ignore) and most of their results, times with gaps, some missing."""
    from traces.steps import Step

    steps: list[Step] = []
    time = datetime(2026, 2, 1, 12, tzinfo=timezone.utc)
    with_ids = rng.random() < 0.7

    def add(**fields) -> None:
        nonlocal time
        time += timedelta(seconds=rng.choice((0, 1, 5, 30, 700, 3600)))
        steps.append(Step(len(steps), time=None if rng.random() < 0.1 else time, **fields))

    pending: list[tuple[str | None, str]] = []
    for k in range(rng.randint(1, 8)):
        if rng.random() < 0.3:
            add(kind=rng.choice(("assistant", "thinking")), output=_fuzz_text(rng, CALL_FRAGMENTS, 3))
        tool = rng.choice(_TOOLS)
        text = _fuzz_text(rng, CALL_FRAGMENTS, 4)
        path = rng.choice(_PATHS)
        if tool in ("Write", "Edit", "write_file", "Read"):
            data = {"file_path": path, "content": text} if tool != "Edit" else {"file_path": path, "old_string": "a",
                                                                                "new_string": text}
            inp = json.dumps(data) if rng.random() < 0.9 else "{" + text
        elif tool == "apply_patch":
            inp = f"*** Begin Patch\n*** {rng.choice(('Add', 'Update'))} File: {path}\n+{text}\n*** End Patch"
        elif tool == "file_change":
            inp = f"{rng.choice('AMD')} {path}"
        elif rng.random() < 0.1:
            inp = json.dumps({"command": text})
        else:
            inp = text
        call_id = f"c{k}" if with_ids else None
        add(kind="tool_call", tool=tool, input=inp, call_id=call_id)
        pending.append((call_id, tool))
        if rng.random() < 0.3 and len(pending) > 1:
            rng.shuffle(pending)
        while pending and rng.random() < 0.8:
            cid, ptool = pending.pop(0)
            if rng.random() < 0.9:
                out = "\n".join(_fuzz_text(rng, OUTPUT_FRAGMENTS, 2) for _ in range(rng.randint(0, 6)))
                add(kind="tool_result", tool=ptool, output=out, call_id=cid)
    return steps


def fuzz_analysis(episodes: int, seed: int) -> list[dict]:
    """Facets, phases, evidence marks (per context of :data:`FUZZ_CONTEXTS`) and call phases of ``episodes``
    random episodes (:func:`fuzz_episode`, seeded)."""
    from ingest import evidence, facets
    from traces import vocabulary

    contexts = {name: evidence.EvidenceContext(*ctx) for name, ctx in FUZZ_CONTEXTS.items()}
    rng = random.Random(seed)
    out = []
    for _ in range(episodes):
        steps = fuzz_episode(rng)
        out.append({
            "facets": [[f.facet, f.value, f.value_num, list(f.steps)] for f in facets.extract(steps)],
            "phases": [[p.phase, p.start_s, p.end_s, p.step_from, p.step_to] for p in facets.phases(steps)],
            "evidence": {name: {str(s.index): ",".join(m) for s in steps
                                if (m := evidence.mark(s.kind, s.tool, s.input, ctx))}
                         for name, ctx in contexts.items()},
            "call_phases": "".join(vocabulary.call_phase(s.input)[0] for s in steps if s.kind == "tool_call"),
        })
    return out


def write(path: Path, data: dict | list) -> None:
    """Write ``data`` as gzip-compressed, key-sorted JSON (mtime 0: same data, same bytes)."""
    raw = json.dumps(data, sort_keys=True, indent=0, ensure_ascii=False).encode()
    with open(path, "wb") as handle, gzip.GzipFile(fileobj=handle, mode="wb", mtime=0) as gz:
        gz.write(raw)


def read(path: Path) -> dict:
    with gzip.open(path, "rb") as handle:
        return json.loads(handle.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--no-long-run", action="store_true")
    parser.add_argument("--long-run-only", action="store_true", help="snapshot only the long run of the tree")
    parser.add_argument("--fuzz", type=int, default=0, help="snapshot this many fuzz episodes instead of a tree")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
    import django

    django.setup()
    from demo.tree import make_demo_results

    if args.fuzz:
        fuzz = fuzz_analysis(args.fuzz, args.seed)
        write(args.out, {"episodes": args.fuzz, "seed": args.seed, "analysis": fuzz})
        print(f"{args.out}: {len(fuzz)} episodes, {args.out.stat().st_size / 1e3:.0f} KB")
        return
    with tempfile.TemporaryDirectory(prefix="ptb-rules-") as tmp:
        report = make_demo_results(root=Path(tmp) / "results", runs=args.runs, seed=args.seed,
                                   long_run=not args.no_long_run)
        only = {report.long_run_dir} if args.long_run_only else None
        data = tree_analysis(report.root, only=only)
    write(args.out, data)
    print(f"{args.out}: {len(data)} runs, {args.out.stat().st_size / 1e3:.0f} KB")


if __name__ == "__main__":
    main()
