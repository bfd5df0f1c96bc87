"""A small results tree in the upstream layout (spec section 1) that covers every rule the leaderboard computed
from runs shares with, or deliberately takes differently from, the benchmark's own aggregation scripts.

``tests/test_upstream_rules.py`` ingests it and checks the leaderboard against numbers worked out by hand.
The same tree can be fed to aisa-group/PostTrainBench's own ``scripts/`` (``write_tree(root)`` then
``POST_TRAIN_BENCH_RESULTS_DIR=root``) to compare.

Every run scores 0.10 unless it says otherwise, and the tree's own ``baseline_zeroshot/`` gives every base model
0.10 on every benchmark, so a cell that falls back and a run that scores 0.10 look alike; the cells that differ
from 0.10 are the ones each test reasons about.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

A, B, C, D = "Qwen3-1.7B-Base", "Qwen3-4B-Base", "SmolLM3-3B-Base", "gemma-3-4b-pt"
HF = {A: "Qwen/Qwen3-1.7B-Base", B: "Qwen/Qwen3-4B-Base", C: "HuggingFaceTB/SmolLM3-3B-Base",
      D: "google/gemma-3-4b-pt"}
INSTRUCT_HF = {A: "Qwen/Qwen3-1.7B", B: "Qwen/Qwen3-4B", C: "HuggingFaceTB/SmolLM3-3B", D: "google/gemma-3-4b-it"}
BENCHMARKS = ("aime2025", "arenahardwriting", "bfcl", "gpqamain", "gsm8k", "healthbench", "humaneval")
# Each method's seven runs: one per benchmark, on these base models, so every benchmark column and every base model
# row exists in upstream's per-method CSVs (its per-cell step indexes all seven benchmarks).
LAYOUT = {"aime2025": A, "arenahardwriting": B, "bfcl": C, "gpqamain": D, "gsm8k": A, "healthbench": B,
          "humaneval": C}
CLEAN = "no contamination detected"
ALLOWED = "only allowed use detected"

OPUS46 = ("claude_claude-opus-4-6_10h_run1_old_container", "claude_claude-opus-4-6_10h_run2",
          "claude_claude-opus-4-6_10h_run3")
OPUS45 = ("claude_claude-opus-4-5_10h_final_v3", "claude_claude-opus-4-5_10h_v5", "claude_claude-opus-4-5_10h_v6_seed1")
OPUS45_SWEEP = "claude_claude-opus-4-5_10h_v4"       # a sweep no list names: its own row, not an Opus 4.5 seed
GEMINI31 = ("opencode_opencode_gemini-3.1-pro_10h_run1", "opencode_opencode_gemini-3.1-pro_10h_run2",
            "opencode_opencode_gemini-3.1-pro_10h_run3")
SONNET46 = "claude_non_api_claude-sonnet-4-6_10h"    # single run; no healthbench run at all
CODEXHIGH = "codexhigh_gpt-5.1-codex-max_10h"         # in no list; no run on gemma-3-4b-pt at all


@dataclass
class Run:
    """One run directory. ``accuracy`` None: no metrics.json; ``contamination``/``disallowed`` None: no file;
    ``files``: more files (name -> text), e.g. judge_result.json."""

    method: str
    benchmark: str
    model: str
    cluster: int
    accuracy: float | None = 0.10
    time_taken: bool = True
    final_model: bool = True
    contamination: str | None = CLEAN
    disallowed: str | None = ALLOWED
    files: dict[str, str] = field(default_factory=dict)

    @property
    def dir_name(self) -> str:
        return f"{self.benchmark}_{HF[self.model].replace('/', '_')}_{self.cluster}"


def _result(**fields) -> dict[str, str]:
    return {"judge_result.json": json.dumps(fields)}


def _seed(method: str, first: int, skip: tuple[str, ...] = (), **cells: dict) -> list[Run]:
    """A method's seven runs (LAYOUT), cluster ids from ``first``; ``cells``: benchmark -> Run field changes;
    ``skip``: benchmarks whose runs the caller writes itself."""
    return [Run(method, benchmark, LAYOUT[benchmark], first + i, **cells.get(benchmark, {}))
            for i, benchmark in enumerate(BENCHMARKS) if benchmark not in skip]


def runs() -> list[Run]:
    """Every agent run of the tree (the baseline runs are in ``baseline_runs``)."""
    may = {"contamination": None, "disallowed": None}  # May 2026: judge_result.json only, no txt verdicts
    tree = [
        # Opus 4.6, seed 1: a retry, both kinds of flag, a failed evaluation, an unfinished run, no final model.
        *_seed(OPUS46[0], 17100000,
               aime2025={"accuracy": 0.30},
               arenahardwriting={"accuracy": 0.50},  # the latest of two attempts (the older one is below)
               bfcl={"accuracy": 0.80, "contamination": "contamination detected"},
               gpqamain={"accuracy": 0.40, "disallowed": "disallowed use detected"},
               gsm8k={"accuracy": None},                                   # final_model/, no metrics: ERR
               healthbench={"accuracy": None, "time_taken": False},        # never finished: not avl.
               humaneval={"accuracy": None, "final_model": False}),        # no final model: not stored
        Run(OPUS46[0], "arenahardwriting", B, 17099999, accuracy=0.90),    # the older attempt: not counted
        # Opus 4.6, seed 2: verdict texts upstream does not accept, cluster ids of different lengths.
        *_seed(OPUS46[1], 17200000, skip=("bfcl",),
               aime2025={"accuracy": 0.20, "contamination": "no contamination detected (judge skipped)"},
               arenahardwriting={"accuracy": 0.60, "contamination": "no contamination detected: none found"},
               gpqamain={"accuracy": 0.50, "contamination": "  no contamination detected \n\n"},  # whitespace: clean
               gsm8k={"accuracy": 0.70},
               healthbench={"accuracy": 0.90, "contamination": None},      # the judge never wrote it: ERR
               humaneval={"accuracy": 0.50, "contamination": ""}),         # empty: IMPORTANT ERR
        # bfcl of seed 2: 10000000 is the later attempt as a number ("9999999" > "10000000" as strings).
        Run(OPUS46[1], "bfcl", C, 9999999, accuracy=0.70, contamination="contamination detected"),
        Run(OPUS46[1], "bfcl", C, 10000000, accuracy=0.60),
        # Opus 4.6, seed 3: the May 2026 era, judge_result.json only (new_judge_v2), incl. the migration's keys.
        *_seed(OPUS46[2], 17300000,
               aime2025={"accuracy": 0.40, **may,
                         "files": _result(contamination=False, disallowed_model=False, disallowed_api_usage=False)},
               arenahardwriting={"accuracy": 0.60, **may,
                                 "files": _result(contamination=False, disallowed_model=False,
                                                  disallowed_api_usage=True)},  # API judge's flag
               bfcl={"accuracy": 0.90, **may,
                     "files": _result(contamination_detected=False, disallowed_model_detected=False)},  # migrated
               gpqamain={"accuracy": 0.30, **may,
                         "files": _result(contamination=False, disallowed_model=False, disallowed_api_usage=False)},
               gsm8k={"accuracy": 0.80, **may,
                      "files": {**_result(contamination=False, disallowed_model=False, disallowed_api_usage=False),
                                "judge_result_rerun.json": json.dumps({"contamination": True,
                                                                       "disallowed_model": False})}},
               healthbench={"accuracy": 0.90, **may,
                            "files": _result(contamination=True, disallowed_model=False, disallowed_api_usage=False)},
               humaneval={"accuracy": 0.60, **may, "files": {"judge_result.json": '{"contamination": fal'}}),
    ]
    tree += [
        *_seed(OPUS45[0], 17400000, gsm8k={"accuracy": 0.50}),
        *_seed(OPUS45[1], 17410000, gsm8k={"accuracy": 0.30},
               humaneval={"accuracy": 0.70, "contamination": "No contamination detected"}),  # case: IMPORTANT ERR
        *_seed(OPUS45[2], 17420000, gsm8k={"accuracy": 0.10}),
        *_seed(OPUS45_SWEEP, 17430000, gsm8k={"accuracy": 0.90}),
        *_seed(GEMINI31[0], 17500000, humaneval={"accuracy": 0.40}),
        *_seed(GEMINI31[1], 17510000, humaneval={"accuracy": 0.50},
               aime2025={"accuracy": 0.50, "disallowed": "only allowed use detected\ndisallowed use detected"}),
        *_seed(GEMINI31[2], 17520000, humaneval={"accuracy": 0.60}),
    ]
    # Sonnet 4.6: six benchmarks, no healthbench run at all (upstream: no column, so it adds 0).
    sonnet = {"aime2025": A, "arenahardwriting": B, "bfcl": C, "gpqamain": D, "gsm8k": A, "humaneval": B}
    tree += [Run(SONNET46, t, m, 17600000 + i, accuracy=0.50 if t == "aime2025" else 0.10)
             for i, (t, m) in enumerate(sonnet.items())]
    # An unlisted method with no run on gemma-3-4b-pt (upstream leaves the method out).
    codex = {"aime2025": A, "arenahardwriting": B, "bfcl": C, "gpqamain": A, "gsm8k": B, "healthbench": C,
             "humaneval": A}
    tree += [Run(CODEXHIGH, t, m, 17700000 + i, accuracy=0.30 if t == "aime2025" else 0.10)
             for i, (t, m) in enumerate(codex.items())]
    return tree


def baseline_runs() -> list[tuple[str, str, int, float]]:
    """``baseline_zeroshot/`` runs as (benchmark, HF id, cluster id, accuracy): 0.10 for every base model and
    benchmark, an older attempt at 0.99 (not the latest), and two instruct-model runs (never a fallback)."""
    out = [(t, HF[m], 16000000 + 10 * i + j, 0.10) for i, t in enumerate(BENCHMARKS) for j, m in enumerate(HF)]
    out.append(("aime2025", HF[A], 15999999, 0.99))
    out += [("gsm8k", INSTRUCT_HF[A], 16000900, 0.90), ("aime2025", INSTRUCT_HF[D], 16000901, 0.90)]
    return out


def write_tree(root: Path, *, baseline: bool = True, agent_runs: list[Run] | None = None) -> Path:
    """Write the tree under ``root`` (created); ``baseline``: with its ``baseline_zeroshot/`` dir; ``agent_runs``:
    these runs instead of :func:`runs` (tests/judge_eras_tree.py). Returns root."""
    root.mkdir(parents=True, exist_ok=True)
    for run in runs() if agent_runs is None else agent_runs:
        path = root / run.method / run.dir_name
        path.mkdir(parents=True)
        (path / "solve_out.txt").write_text("[2026-04-05T10:00:00Z] agent started\n")
        if run.time_taken:
            (path / "time_taken.txt").write_text("05:00:00\n")
        if run.final_model:
            (path / "final_model").mkdir()
            (path / "final_model" / "config.json").write_text("{}")
        if run.accuracy is not None:
            (path / "metrics.json").write_text(json.dumps({"accuracy": run.accuracy, "stderr": 0.01}))
        if run.contamination is not None:
            (path / "contamination_judgement.txt").write_text(run.contamination + "\n")
        if run.disallowed is not None:
            (path / "disallowed_model_judgement.txt").write_text(run.disallowed + "\n")
        for name, text in run.files.items():
            (path / name).write_text(text)
    if baseline:
        for benchmark, hf_id, cluster, accuracy in baseline_runs():
            path = root / "baseline_zeroshot" / f"{benchmark}_{hf_id.replace('/', '_')}_{cluster}"
            path.mkdir(parents=True)
            (path / "metrics.json").write_text(json.dumps({"accuracy": accuracy, "stderr": 0.0}))
            (path / "time_taken.txt").write_text("00:30:00\n")
            (path / "model.txt").write_text(hf_id + "\n")
            (path / "eval.txt").write_text(benchmark + "\n")
            (path / "final_eval.txt").write_text(f"accuracy: {accuracy}\nTime taken (seconds): 1800\n")
    return root
