#!/usr/bin/env bash
# Time the GPU evaluation path as the harness runs it: evaluator.runner with the vLLM provider, the real inspect_evals
# gsm8k task (offline, on a local copy of a synthetic openai/gsm8k), the harness's model args (gpu_memory_utilization
# 0.3, its chat template) and settings (max_connections 2, timeouts), each attempt in a fresh process.
# Meant for a CUDA machine (H200); never run in CI.
#
#   bench/gpu_rerun.sh [CHECKPOINT_DIR] [SAMPLES] [MAX_TOKENS]
#
# CHECKPOINT_DIR  an HF checkpoint (e.g. a run's final_model/). Omitted: a random Qwen2 of Qwen2-0.5B's
#                 attention shape (hidden 896 in 14 heads, 24 layers, ~430-token vocabulary) is built into bench/out/,
#                 which times the machinery, not a real model (it rarely stops before MAX_TOKENS).
# SAMPLES         questions of the synthetic gsm8k (default 200).
# MAX_TOKENS      new tokens per answer (default 4000, the harness's first rung for gsm8k).
# TEMPLATES_DIR   (env) the harness's src/eval/templates (qwen3.jinja, ...). Unset: a ChatML stand-in is written
#                 to bench/out/templates and the figures say the template is not the harness's.
# PROVIDER        (env) vllm (default); hf only to smoke-test this script on a CPU machine.
#
# Offline: vllm, inspect-ai, inspect-evals, datasets, transformers and a CUDA torch come from wheels carried in
# .whl/ when the machine's python3.12 lacks them. Prints the score (a fraction 0..1), samples/s and the settings.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONUNBUFFERED=1
OUT_DIR=bench/out
mkdir -p "$OUT_DIR"
PY=${PYTHON:-python3.12}
export PROVIDER=${PROVIDER:-vllm}
NEEDED="inspect_ai, inspect_evals, datasets, transformers"
[ "$PROVIDER" = vllm ] && NEEDED="vllm, $NEEDED"

if ! "$PY" -c "import $NEEDED" 2>/dev/null; then
    "$PY" -m venv /tmp/ptb-gpu-venv
    PY=/tmp/ptb-gpu-venv/bin/python
    "$PY" -m pip install --quiet --no-index --find-links .whl vllm inspect-ai inspect-evals datasets transformers \
        tokenizers safetensors
    export PATH=/tmp/ptb-gpu-venv/bin:$PATH  # inspect's vllm provider starts `vllm serve`
fi

CHECKPOINT=${1:-}
SAMPLES=${2:-200}
MAX_TOKENS=${3:-4000}

"$PY" - "$CHECKPOINT" "$SAMPLES" "$MAX_TOKENS" "$OUT_DIR" <<'PY'
import os
import sys
from pathlib import Path

from demo.datasets import synthetic_rows
from evaluator.hf_cache import write_local_dataset
from evaluator.runner import evaluate_checkpoint
from evaluator.tiny_model import CHATML_TEMPLATE, build_tiny_checkpoint

checkpoint_arg, samples, max_tokens, out_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
if checkpoint_arg:
    checkpoint = Path(checkpoint_arg).resolve()
else:
    checkpoint = build_tiny_checkpoint(out_dir / "random_qwen2_0.5b_shape", hidden_size=896, num_layers=24)
if "TEMPLATES_DIR" in os.environ:
    templates = Path(os.environ["TEMPLATES_DIR"])
else:
    templates = out_dir / "templates"
    templates.mkdir(exist_ok=True)
    for name in ("qwen3.jinja", "smollm.jinja", "gemma3.jinja", "llama3.jinja"):
        (templates / name).write_text(CHATML_TEMPLATE)

# A local copy of a synthetic openai/gsm8k in the Hugging Face datasets cache layout: the real task reads it offline.
dataset = write_local_dataset(out_dir / f"gsm8k-synthetic-{samples}", benchmark="gsm8k",
                              rows=synthetic_rows("gsm8k", samples), description="synthetic gsm8k", synthetic=True)


def report(done: int, total: int) -> None:
    if done % 50 == 0 or done == total:
        print(f"progress {done}/{total}", flush=True)


outcome = evaluate_checkpoint(
    checkpoint=checkpoint, benchmark="gsm8k", limit=None, max_tokens=max_tokens, log_dir=out_dir / "logs",
    provider=os.environ["PROVIDER"], dataset_path=dataset.path, templates_dir=templates, on_progress=report,
)
scored = outcome.attempts[-1]
print(f"checkpoint {checkpoint}")
print(f"model {outcome.model_id}, log {outcome.log_path}")
print(f"versions {outcome.versions}")
print(f"settings {outcome.settings}")
print(f"score {outcome.score:.4f} (stderr {outcome.stderr}), samples {outcome.samples_done}/{outcome.samples_total}")
print(f"samples/s {outcome.samples_done / scored.seconds:.2f} (attempt {scored.seconds:.1f} s incl. its process start "
      f"and model load; whole call {outcome.seconds:.1f} s)")
PY
