"""What a newcomer reads in the terminal (issue 29): ``make serve`` and ``make worker`` show progress as they go
(pip without -q, the demo tree's runs one by one, ingest's runs), ingest names
each problem and where it is, ``compact_warehouse`` says what it did in words, "Serving on" once, ``make worker``
ends with the demo run's URL, the README says how to pick the port."""
from __future__ import annotations

import json
import os
import re
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from ptbsite.management.commands.compact_warehouse import describe
from ptbsite.warehouse.maintenance import Compaction
from tests.conftest import write_run

ROOT = Path(__file__).resolve().parent.parent


def test_make_prints_as_it_goes_and_says_serving_once():
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install -q" not in makefile and "pip install -r requirements.txt" in makefile
    assert "export PYTHONUNBUFFERED := 1" in makefile  # lines reach a pipe (tee, CI logs) as they are printed
    assert re.search(r"manage\.py ingest \$\(DEMO_RESULTS\)\n", makefile)  # not --quiet: each run and problem
    assert "Serving on" not in makefile  # `serve` says it, once
    serve = (ROOT / "ptbsite" / "management" / "commands" / "serve.py").read_text()
    assert serve.count("Serving on") == 1
    readme = (ROOT / "README.md").read_text()
    assert "`make serve PORT=8080`" in readme and "`PORT=` and `HOST=` set where it serves" in readme


def test_the_demo_tree_says_each_run_as_it_is_written(tmp_path: Path):
    out = StringIO()
    call_command("make_demo_results", str(tmp_path / "tree"), runs=3, seed=1, no_long_run=True, stdout=out)
    lines = out.getvalue().splitlines()
    assert [re.sub(r": .*", "", line) for line in lines[:3]] == ["run 1 of 3", "run 2 of 3", "run 3 of 3"]
    assert re.fullmatch(r"run 1 of 3: [\w.-]+/[\w.-]+ \(\d+\.\d MB so far\)", lines[0])
    assert lines[-1].startswith("Wrote 3 runs in ")


@pytest.mark.django_db
def test_ingest_names_each_problem_and_where_it_is(tmp_path: Path, fresh_warehouse: Path, capsys):
    root = tmp_path / "results"
    run_dir = write_run(root, checkpoint=None)
    (run_dir / "solve_out.txt").write_text(
        json.dumps({"type": "system", "subtype": "init", "model": "m"}) + "\n" + '{"type":"assistant","mess\n')
    call_command("ingest", str(root), quiet=True)
    captured = capsys.readouterr()
    problems = [line for line in captured.err.splitlines() if "solve_out.txt:2" in line]
    assert len(problems) == 1 and "broken JSON line" in problems[0]
    assert re.search(r"claude_claude-opus-4-6_10h_run1/gsm8k_Qwen_Qwen3-1\.7B-Base_17000001/solve_out\.txt:2",
                     problems[0])  # which file of which run
    out = captured.out.splitlines()
    summary = next(i for i, line in enumerate(out) if "runs stored" in line)
    n = int(re.search(r"(\d+) problems?,", out[summary])[1])
    assert out[summary + 1] == (f"{n} problem{'s' if n != 1 else ''} listed above; nothing stored was lost, and "
                                "each run's page lists its own (\"ingest problems\").")


def test_compaction_is_told_in_words():
    done = Compaction(kind="ducklake-sqlite", live_files_before=185, live_files_after=11, disk_files_before=185,
                      disk_files_after=191, rows_flushed=0, files_merged=174, snapshots_expired=0, files_deleted=0,
                      seconds=0.84)
    assert describe(done, 3600) == (
        "compacted in 0.8 s. The site now reads 11 files (185 before): 174 files merged into others. On disk: 191 "
        "files (185 before); the 180 that nothing reads any more stay until they are 1:00 (h:mm) old, so requests "
        "already reading them can finish (--keep 0 removes them now, only while nothing reads or writes the "
        "warehouse); 0 files deleted, 0 old snapshots expired.")
    flushed = Compaction(kind="ducklake-sqlite", live_files_before=2232, live_files_after=20, disk_files_before=2232,
                         disk_files_after=20, rows_flushed=4469, rows_laid_out=35402, files_merged=2212,
                         snapshots_expired=671, files_deleted=2212, seconds=3.7)
    assert describe(flushed, 0) == (
        "compacted in 3.7 s. The site now reads 20 files (2,232 before): 2,212 files merged into others, 4,469 rows "
        "moved from the catalog into files, 35,402 rows of the per-run tables (steps, monitor, phases) rewritten "
        "sorted by run. On disk: 20 files (2,232 before); 2,212 files deleted, 671 old "
        "snapshots expired.")


def test_make_worker_ends_with_the_demo_run_url(tmp_path: Path, settings):
    from tests.conftest import RERUN_METHOD, RERUN_RUN_DIR
    from traces.layout import run_id as make_run_id

    root = tmp_path / "demo-results"
    run_dir = write_run(root, checkpoint=None)
    (run_dir / "final_model").mkdir()
    (run_dir / "final_model" / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"]}))
    settings.PTB_LOCAL_DATASETS_DIR, settings.DATA_DIR = tmp_path / "datasets", tmp_path / "data"
    settings.PTB_PUBLIC_URL = "http://127.0.0.1:8123"
    out = StringIO()
    call_command("demo_worker_assets", str(root), train_steps=0, stdout=out)  # untrained: quick to build
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("The demo run to re-evaluate") and last.endswith(
        f": http://127.0.0.1:8123/runs/{make_run_id(RERUN_METHOD, RERUN_RUN_DIR)}/")  # a URL, not a path


def test_make_serve_keeps_the_demo_tree_in_the_data_folder_it_is_given(tmp_path: Path):
    """``PTB_DATA_DIR=/x make serve`` (the settings' data folder) puts the generated demo tree under /x too, as it
    does the warehouse, Django's tables and the worker's templates (``make worker``), not in the checkout's data/."""
    env = {**os.environ, "PTB_DATA_DIR": str(tmp_path / "data")}
    dry = subprocess.run(["make", "-n", "-s", "-B", "setup", "worker"], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=True).stdout
    tree = f"{tmp_path / 'data'}/demo-results"
    assert f"make_demo_results {tree} --runs 40" in dry and f"manage.py ingest {tree}\n" in dry
    assert f"demo_worker_assets {tree}\n" in dry and " data/demo-results" not in dry
    plain = subprocess.run(["make", "-n", "-s", "-B", "setup"], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={k: v for k, v in os.environ.items() if k != "PTB_DATA_DIR"}).stdout
    assert "manage.py ingest data/demo-results\n" in plain
