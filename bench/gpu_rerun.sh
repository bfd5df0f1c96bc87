#!/usr/bin/env bash
# Time the GPU evaluation path: evaluator.runner with the vLLM provider on a local gsm8k-format dataset.
# Meant for a CUDA machine (H200); never run in CI.
#
#   bench/gpu_rerun.sh [CHECKPOINT_DIR] [SAMPLES] [MAX_TOKENS]
#
# CHECKPOINT_DIR  an HF checkpoint (e.g. a run's final_model/). Omitted: a random Qwen2 of Qwen2-0.5B's
#                 attention shape (hidden 896 in 14 heads, 24 layers, ~430-token vocabulary) is built into bench/out/,
#                 which times the machinery, not a real model (it rarely stops before MAX_TOKENS).
# SAMPLES         rows of the synthetic dataset (default 200).
# MAX_TOKENS      new tokens per answer (default 512; the real gsm8k ladder starts at 4000).
# TEMPLATES_DIR   (env) the harness's templates/ folder, needed for gemma, llama and smollm checkpoints.
# PROVIDER        (env) vllm (default); hf only to smoke-test this script on a CPU machine.
#
# Offline: vllm, inspect-ai, transformers and a CUDA torch come from wheels carried in .whl/ when the
# machine's python3.12 lacks them. Prints the score (a fraction 0..1) and samples/s.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
OUT_DIR=bench/out
mkdir -p "$OUT_DIR"
PY=${PYTHON:-python3.12}
export PROVIDER=${PROVIDER:-vllm}
NEEDED="inspect_ai, transformers"
[ "$PROVIDER" = vllm ] && NEEDED="vllm, $NEEDED"

if ! "$PY" -c "import $NEEDED" 2>/dev/null; then
    "$PY" -m venv /tmp/ptb-gpu-venv
    PY=/tmp/ptb-gpu-venv/bin/python
    "$PY" -m pip install --quiet --no-index --find-links .whl vllm inspect-ai transformers tokenizers safetensors
    export PATH=/tmp/ptb-gpu-venv/bin:$PATH  # inspect's vllm provider starts `vllm serve`
fi

CHECKPOINT=${1:-}
SAMPLES=${2:-200}
MAX_TOKENS=${3:-512}

"$PY" - "$CHECKPOINT" "$SAMPLES" "$MAX_TOKENS" "$OUT_DIR" <<'PY'
import json
import os
import sys
from pathlib import Path

from evaluator.runner import evaluate_checkpoint
from evaluator.tiny_model import build_tiny_checkpoint

checkpoint_arg, samples, max_tokens, out_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
if checkpoint_arg:
    checkpoint = Path(checkpoint_arg).resolve()
else:
    checkpoint = build_tiny_checkpoint(out_dir / "random_qwen2_0.5b_shape", hidden_size=896, num_layers=24)

# gsm8k-format rows: a question and its numeric answer, scored by the last number in the reply.
dataset = out_dir / "gsm8k_synthetic.jsonl"
with dataset.open("w") as f:
    for i in range(samples):
        f.write(json.dumps({"input": f"What is {i} + {i + 7}? Answer with a number.", "target": str(2 * i + 7)}) + "\n")

def report(done: int, total: int) -> None:
    if done % 50 == 0 or done == total:
        print(f"progress {done}/{total}", flush=True)


outcome = evaluate_checkpoint(
    checkpoint=checkpoint, benchmark="gsm8k", limit=None, max_tokens=max_tokens, log_dir=out_dir / "logs",
    provider=os.environ["PROVIDER"], dataset_path=dataset,
    templates_dir=Path(os.environ["TEMPLATES_DIR"]) if "TEMPLATES_DIR" in os.environ else None,
    on_progress=report,
)
scored = outcome.attempts[-1]
print(f"checkpoint {checkpoint}")
print(f"model {outcome.model_id}, inspect {outcome.inspect_version}, log {outcome.log_path}")
print(f"score {outcome.score:.4f} (stderr {outcome.stderr}), samples {outcome.samples_done}/{outcome.samples_total}")
print(f"samples/s {outcome.samples_done / scored.seconds:.2f} (eval {scored.seconds:.1f} s, "
      f"whole call incl. model load {outcome.seconds:.1f} s)")
PY
