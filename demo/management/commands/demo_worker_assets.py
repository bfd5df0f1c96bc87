"""``python manage.py demo_worker_assets [RESULTS_DIR]``: make one demo run rerunnable on a CPU worker (``make
worker`` runs it before starting the worker; idempotent).

The generated demo tree (``make_demo_results``, written by ``make serve`` without torch) holds config-only
``final_model/`` stubs. This command, on the worker's side where torch is installed:

1. picks the demo run to make rerunnable: the first scored ``gsm8k_Qwen_*`` run (by method and run directory)
   with a ``final_model/``;
2. writes a real tiny Qwen2 checkpoint into its ``final_model/`` (evaluator.tiny_model), trained on 6 of the 8
   questions of the synthetic dataset below as inspect_evals' gsm8k asks them (demo.datasets.gsm8k_conversation),
   so it answers briefly (the 4,000-token ladder rung ends in seconds on a CPU) and gets some answers right;
3. writes a synthetic local copy of the benchmark's dataset (openai/gsm8k in the Hugging Face ``datasets``
   cache layout, 8 test questions) under PTB_LOCAL_DATASETS_DIR, which the run page's rerun form offers first;
4. writes a stand-in ``qwen3.jinja`` (ChatML, not the harness's file) into DATA_DIR/worker/templates, used when
   the worker has no PTB_TEMPLATES_DIR; the provenance of such an evaluation says its template is not the
   harness's.

Prints the run page's URL (on PTB_PUBLIC_URL, which ``make worker`` sets as ``make serve`` does). Real reruns need the real datasets in the worker's cache and the harness's templates.
"""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from demo.datasets import gsm8k_conversation, gsm8k_corpus, synthetic_rows
from evaluator.hf_cache import local_datasets, write_local_dataset
from evaluator.tiny_model import CHATML_TEMPLATE, build_tiny_checkpoint
from traces.layout import run_id as make_run_id

DEMO_DATASET = "gsm8k-demo"
TRAIN_STEPS = 600
HIDDEN_SIZE = 64
TEMPLATES = Path("worker") / "templates"


def pick_run(root: Path) -> Path | None:
    """The demo run directory to make rerunnable (see the module docstring), or None."""
    for run_dir in sorted(root.glob("*/gsm8k_Qwen_*")):
        if (run_dir / "metrics.json").is_file() and (run_dir / "final_model").is_dir():
            return run_dir
    return None


class Command(BaseCommand):
    help = "Make one demo run rerunnable on a CPU worker: a tiny checkpoint, a local dataset, a template."

    def add_arguments(self, parser):
        parser.add_argument("results", nargs="?", default="data/demo-results", help="the demo results tree")
        parser.add_argument("--train-steps", type=int, default=TRAIN_STEPS,
                            help="training steps of the tiny checkpoint (0: random weights, answers run to max_tokens)")

    def handle(self, *args, results: str, train_steps: int, **options):
        root = Path(results)
        run_dir = pick_run(root)
        if run_dir is None:
            raise CommandError(f"{root}: no scored gsm8k_Qwen_* run with a final_model/ (run `make serve` first, "
                               "which writes the demo tree)")
        checkpoint = run_dir / "final_model"
        if not (checkpoint / "model.safetensors").is_file():
            stub = json.loads((checkpoint / "config.json").read_text())
            build_tiny_checkpoint(checkpoint, hidden_size=HIDDEN_SIZE, train_steps=train_steps, examples=gsm8k_conversation,
                                  corpus=gsm8k_corpus(), progress=self.stdout.write)
            (checkpoint / "DEMO.md").write_text(
                "A tiny Qwen2 checkpoint (about 110k parameters, trained on 6 of the 8 questions of the demo's synthetic "
                "gsm8k dataset) standing in for the agent's model of this "
                f"synthetic run, written by `manage.py demo_worker_assets`; the run's own config named "
                f"{stub.get('_name_or_path') or stub.get('architectures')}.\n")
            self.stdout.write(f"wrote a tiny checkpoint into {checkpoint}")
        datasets_dir = Path(settings.PTB_LOCAL_DATASETS_DIR)
        if not any(d.path.name == DEMO_DATASET for d in local_datasets(datasets_dir, "gsm8k")):
            write_local_dataset(datasets_dir / DEMO_DATASET, benchmark="gsm8k", rows=synthetic_rows("gsm8k", 8),
                                description="gsm8k demo (made-up questions in openai/gsm8k's fields)",
                                synthetic=True)
            self.stdout.write(f"wrote a synthetic gsm8k dataset into {datasets_dir / DEMO_DATASET}")
        templates = Path(settings.DATA_DIR) / TEMPLATES
        if not (templates / "qwen3.jinja").is_file():
            templates.mkdir(parents=True, exist_ok=True)
            (templates / "qwen3.jinja").write_text(CHATML_TEMPLATE)
            (templates / "README.md").write_text(
                "Stand-in chat templates for the demo worker (ChatML, written by the project, not the harness's "
                "files). Point PTB_TEMPLATES_DIR at the harness's src/eval/templates for real reruns.\n")
        rid = make_run_id(run_dir.parent.name, run_dir.name)
        url = f"{settings.PTB_PUBLIC_URL.rstrip('/')}/runs/{rid}/"
        self.stdout.write(f"The demo run to re-evaluate (log in as a staff user, then \"Re-evaluate\" once the worker "
                          f"below says ready): {url}")
