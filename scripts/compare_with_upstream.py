"""Compare the leaderboard computed from runs (``/api/leaderboard?source=runs``, every base-model view) with what
aisa-group/PostTrainBench's own aggregation scripts compute on the same tree (tests/results_tree.py).

    .venv/bin/python scripts/compare_with_upstream.py [--mirror PATH_TO_BARE_GIT_MIRROR] [--out DIR]

The upstream scripts are taken with ``git archive`` from a local mirror of the upstream repository (branches
qol_multigpu, main, new_judge_v2) into a temporary folder and run there; nothing of them enters this repository.
Prints, per comparison, how many values are equal (to 1e-9) and each value that differs.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(WT))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--mirror", default="/work/.mirror/aisa-group+PostTrainBench/repo")
parser.add_argument("--out", default=None, help="work folder (default: a temporary one)")
args = parser.parse_args()
OUT = Path(args.out or tempfile.mkdtemp(prefix="ptb-upstream-")); shutil.rmtree(OUT, ignore_errors=True)
OUT.mkdir(parents=True)
for branch, name in (("qol_multigpu", "qol"), ("main", "main"), ("new_judge_v2", "nj2")):
    (OUT / f"upstream-{name}").mkdir()
    archive = subprocess.run(["git", "-C", args.mirror, "archive", branch, "scripts"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(OUT / f"upstream-{name}")], input=archive, check=True)
os.environ["DJANGO_SETTINGS_MODULE"] = "ptbsite.settings"
os.environ["DATABASE_URL"] = f"sqlite:///{OUT}/django.sqlite3"
from tests import results_tree as tree  # noqa: E402

T1 = tree.write_tree(OUT / "tree_with_baseline")
T0 = tree.write_tree(OUT / "tree_without_baseline", baseline=False)
PY = sys.executable

def run(cmd, cwd, env=None):
    r = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    if r.returncode:
        print("FAILED", cmd, r.stdout[-2000:], r.stderr[-2000:]); raise SystemExit(1)
    return r.stdout

def read_grid(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return {r["model"]: {k: v for k, v in r.items() if k != "model"} for r in rows}

def read_metrics(path):
    with open(path) as f:
        return {r[0]: r[1:] for r in list(csv.reader(f))[1:]}

# --- upstream qol_multigpu: collect.py + aggregate.py (fallback: baselines.json, the published baseline)
QOL = OUT / "upstream-qol/scripts"; OQ = OUT / "qol"; OQ.mkdir()
run([PY, "collect.py", "--data-dir", str(T0), "--output-dir", str(OQ)], QOL)
run([PY, "aggregate.py", "--data-dir", str(OQ)], QOL)

# --- upstream main: aggregate_methods/contamination/final + compute_single_metrics (+ per-agent scripts with the
# map cut to the agents present: main's scripts stop on an agent of the map without runs)
MAIN = OUT / "upstream-main/scripts"
def main_pipeline(root, contamination_override=None):
    env = {"POST_TRAIN_BENCH_RESULTS_DIR": str(root)}
    for s in ("aggregate_methods.py", "aggregate_contamination.py"):
        run([PY, s], MAIN, env)
    for method, src in (contamination_override or {}).items():
        shutil.copy(src, root / f"contamination_{method}.csv")
    run([PY, "aggregate_final.py"], MAIN, env)
    run([PY, "compute_single_metrics.py"], MAIN, env)
    driver = ("import sys; sys.path.insert(0, '.'); import constants, os\n"
              "present = {a: ms for a, ms in constants.HARDCODED_AGENT_MAP.items() if all(os.path.exists(os.path.join(os.environ['POST_TRAIN_BENCH_RESULTS_DIR'], f'final_{m}.csv')) for m in ms)}\n"
              "constants.HARDCODED_AGENT_MAP.clear(); constants.HARDCODED_AGENT_MAP.update(present)\n"
              "import aggregate_avg_stddev, compute_single_metrics_avg_stddev\n"
              "aggregate_avg_stddev.HARDCODED_AGENT_MAP = present; compute_single_metrics_avg_stddev.HARDCODED_AGENT_MAP = present\n"
              "aggregate_avg_stddev.main(); compute_single_metrics_avg_stddev.main()\n")
    run([PY, "-c", driver], MAIN, env)

TM = OUT / "main_tree"; shutil.copytree(T1, TM)
main_pipeline(TM)
# new_judge_v2's aggregate_contamination.py (judge_result.json) for the May-2026 method, the rest as main
NJ2 = OUT / "upstream-nj2/scripts"; TN = OUT / "nj2_only"; TN.mkdir()
s3 = tree.OPUS46[2]
shutil.copytree(T1 / s3, TN / s3)
run([PY, "aggregate_contamination.py"], NJ2, {"POST_TRAIN_BENCH_RESULTS_DIR": str(TN)})
# new_judge_v2 keys its contamination CSV by provider_model (Qwen_Qwen3-4B-Base), while aggregate_methods.py and
# aggregate_final.py (same on that branch) key by model (Qwen3-4B-Base): as shipped, no flag would ever apply.
# Re-key it so that aggregate_final.py sees the verdicts.
nj2_csv = TN / f"contamination_{s3}.csv"
rows = list(csv.reader(open(nj2_csv)))
rows = [rows[0]] + [[r[0].split("_", 1)[1], *r[1:]] for r in rows[1:]]
csv.writer(open(nj2_csv, "w", newline="")).writerows(rows)
TE = OUT / "era_tree"; shutil.copytree(T1, TE)
main_pipeline(TE, {s3: TN / f"contamination_{s3}.csv"})

# qol_multigpu for the txt-era methods, with the May-2026 method's final CSV made the new_judge_v2 way (its
# aggregate_contamination.py, then main's aggregate_final.py with qol's baselines.json as the zero-shot baseline),
# then qol's aggregate.py over all of them.
TQ = OUT / "qol_era_tree"; shutil.copytree(T0, TQ)
env = {"POST_TRAIN_BENCH_RESULTS_DIR": str(TQ)}
run([PY, "aggregate_methods.py"], MAIN, env)
run([PY, "aggregate_contamination.py"], MAIN, env)
shutil.copy(nj2_csv, TQ / f"contamination_{s3}.csv")
zeroshot = json.load(open(QOL / "baselines.json"))["zeroshot"]
with open(TQ / "aggregated_baseline_zeroshot.csv", "w", newline="") as f:
    writer = csv.writer(f); writer.writerow(["model", *tree.BENCHMARKS])
    writer.writerows([[m, *(zeroshot[m][t] for t in tree.BENCHMARKS)] for m in sorted(zeroshot)])
run([PY, "aggregate_final.py", "--methods", s3], MAIN, env)
OQE = OUT / "qol_era"; shutil.copytree(OQ, OQE)
for stale in OQE.glob("aggregated_*"):
    stale.unlink()
shutil.copy(TQ / f"final_{s3}.csv", OQE / f"final_{s3}.csv")
run([PY, "aggregate.py", "--data-dir", str(OQE)], QOL)

# --- ours
import django  # noqa: E402
def ours(root, name):
    os.environ["PTB_WAREHOUSE"] = str(OUT / f"{name}.duckdb")
    from django.conf import settings
    settings.PTB_WAREHOUSE = os.environ["PTB_WAREHOUSE"]
    from ptbsite import warehouse; warehouse.reset_migration_cache()
    from leaderboard.services import import_published
    from ingest.tree import ingest_tree
    from leaderboard.queries import LeaderboardQuery
    import_published(); rep = ingest_tree(root=root, synthetic=False); assert rep.failed == 0
    views = {}
    for view in (None, *tree.HF):
        data = LeaderboardQuery(source="runs", base_model=view or "").known().board().model_dump(mode="json")
        views[view] = {r["key"]: r for r in data["rows"] if r["source"] == "runs"}
    return views
django.setup()
O1 = ours(T1, "with_baseline"); O0 = ours(T0, "without_baseline")

suite = json.load(open(WT / "suites/posttrainbench.json"))
group_of = {a["group"]: a["key"] for a in suite["published"]["agents"] + suite["agent_groups"] if "group" in a}
key_of_method = {m: a["key"] for a in suite["published"]["agents"] + suite["agent_groups"] for m in a["methods"]}

def compare(label, ours_views, updir):
    eq, diff, notes = 0, 0, []
    def check(what, mine, theirs):
        nonlocal eq, diff
        if mine is None and theirs is None or (mine is not None and theirs is not None and abs(mine - theirs) < 1e-9):
            eq += 1
        else:
            diff += 1; notes.append(f"  {what}: ours {mine} upstream {theirs}")
    agg = read_metrics(updir / "single_metrics_aggregated.csv")
    single = read_metrics(updir / "single_metrics.csv")
    for agent, (avg, std, n) in agg.items():
        key = group_of[agent]; row = ours_views[None].get(key)
        check(f"{agent} average", row and row["average"], 100 * float(avg))
        check(f"{agent} std", row and row["std"], 100 * float(std))
        avg_grid = read_grid(updir / f"aggregated_avg_{agent}.csv"); std_grid = read_grid(updir / f"aggregated_std_{agent}.csv")
        for model, cells in avg_grid.items():
            for bench, v in cells.items():
                r = ours_views[model][key]
                check(f"{agent} {model} {bench} value", r["scores"][bench], 100 * float(v))
                check(f"{agent} {model} {bench} std", r["stds"][bench], 100 * float(std_grid[model][bench]))
    for method, (metric,) in single.items():
        if method.startswith(("final_avg_", "final_std_", "avg_", "std_")) or method in key_of_method and \
                sum(1 for m, k in key_of_method.items() if k == key_of_method[method]) > 1:
            continue  # per-seed metrics of group agents are covered by their average and std
        key = key_of_method.get(method, method); row = ours_views[None].get(key)
        check(f"{method} metric", row and row["average"], 100 * float(metric))
    for key, row in ours_views[None].items():  # rows upstream has no metric for
        if key not in group_of.values() and not any(key_of_method.get(m, m) == key for m in single):
            diff += 1; notes.append(f"  {key}: ours {row['average']} upstream (no metric: method left out)")
    print(f"{label}: {eq} values equal, {diff} differ"); print("\n".join(notes))

compare("qol_multigpu collect.py+aggregate.py vs ours, tree without baseline_zeroshot/", O0, OQ)
compare("qol_multigpu, with new_judge_v2's aggregate_contamination.py for the judge_result.json method, vs ours, "
        "tree without baseline_zeroshot/", O0, OQE)
compare("main aggregate_*.py + compute_single_metrics*.py vs ours, tree with baseline_zeroshot/", O1, TM)
compare("main, with new_judge_v2's aggregate_contamination.py for the judge_result.json method, vs ours", O1, TE)

# --- issue 26: the judge-eras tree (tests/judge_eras_tree.py), cell by cell: new_judge_v2's
# aggregate_contamination.py on the judge-era method vs whether our era rule makes the cell fall back on a verdict.
from tests import judge_eras_tree as eras  # noqa: E402
TJ = eras.write_tree(OUT / "judge_eras_tree")
TJN = OUT / "judge_eras_nj2"; TJN.mkdir(); shutil.copytree(TJ / eras.JUDGES, TJN / eras.JUDGES)
run([PY, "aggregate_contamination.py"], NJ2, {"POST_TRAIN_BENCH_RESULTS_DIR": str(TJN)})
upstream_cells = read_grid(TJN / f"contamination_{eras.JUDGES}.csv")
os.environ["PTB_WAREHOUSE"] = str(OUT / "judge_eras.duckdb")
from django.conf import settings as dj_settings  # noqa: E402
dj_settings.PTB_WAREHOUSE = os.environ["PTB_WAREHOUSE"]
from ptbsite import warehouse as wh  # noqa: E402
wh.reset_migration_cache()
from ingest.tree import ingest_tree as _ingest  # noqa: E402
from traces import selectors as run_selectors  # noqa: E402
assert _ingest(root=TJ, synthetic=False).failed == 0
eq = diff = other = 0; notes = []
for run_ in run_selectors.list_runs(limit=None, agent=eras.JUDGES, latest_only=True)[0]:
    rule = run_.verdict_rule.id if run_.verdict_rule else None
    if rule not in ("judge_result", "judge_result_missing"):
        other += 1; notes.append(f"  {run_.benchmark} {run_.base_model}: another era ({rule}), not compared")
        continue
    model = tree.HF[run_.base_model].replace("/", "_")
    theirs = upstream_cells[model][run_.benchmark]
    mine = "falls back" if any(run_.flags.values()) else "clean"
    if (theirs != "") == (mine == "falls back"):
        eq += 1
    else:
        diff += 1; notes.append(f"  {run_.benchmark} {run_.base_model}: ours {mine} ({run_.flags}) upstream {theirs!r}")
print(f"new_judge_v2 aggregate_contamination.py vs our era rule, judge-eras tree, new_judge_v2-era cells: {eq} equal, "
      f"{diff} differ ({other} cells of other eras)")
print("\n".join(notes))
