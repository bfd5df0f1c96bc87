"""Writes of the leaderboard app: loading a suite and its published results into the warehouse."""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from ptbsite import warehouse
from ptbsite.suites import SUITES_DIR, SuiteError, load_suite

DEFAULT_PUBLISHED_DIR = Path(settings.BASE_DIR) / "data" / "published"

# Raw aggregate cell labels (spec section 4.2 step 1) -> why the final cell holds the base model's score.
FALLBACK_LABELS = {"not stored": "not_stored", "ERR": "error", "not avl.": "not_available", "": "missing"}

# The imported rows, each in its table's column order after ``suite`` (ptbsite/warehouse/sql/0001, 0003):
# agents (key, name, kind, scaffold, reasoning effort, model family, position; source "published" is added),
# reported_cells (agent, base model, benchmark, value, std, fallback, source file), reported_scores and
# reported_times (agent, average or hours, std, runs, source file), reported_series (series, label, agent,
# budget hours, reasoning effort, score, score std, hours, hours std, tokens, position, source file).
AgentRow = tuple[str, str, str, str | None, str | None, str | None, int]
CellRow = tuple[str, str, str, float, float | None, str | None, str]
ScoreRow = tuple[str, float, float | None, int, str]
SeriesRow = tuple[str, str, str | None, float | None, str | None, float, float | None, float | None, float | None,
                  float | None, int, str]


class PublishedDataError(ValueError):
    """A published file is missing or malformed; the message names the file and the line."""


@dataclass
class ImportReport:
    """What ``import_published`` stored: row counts per table."""

    suite: str
    counts: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        parts = ", ".join(f"{n} {table}" for table, n in self.counts.items())
        return f"suite {self.suite}: {parts}"


def _fraction(text: str, path: Path, line: int, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise PublishedDataError(f"{path}:{line}: column {column!r}: {text!r} is not a number") from None
    if not math.isfinite(value) or not -1e-9 <= value <= 1 + 1e-9:
        raise PublishedDataError(f"{path}:{line}: column {column!r}: {value} is not a fraction in [0, 1]")
    return value


def _read_csv(path: Path, required: list[str]) -> list[tuple[int, dict[str, str]]]:
    """Rows of a CSV as (line number, row); the header must hold every required column."""
    if not path.exists():
        raise PublishedDataError(f"{path}: file not found")
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise PublishedDataError(f"{path}:1: header lacks column(s) {', '.join(missing)}")
        rows = []
        for row in reader:
            if None in row or any(v is None for v in row.values()):
                raise PublishedDataError(f"{path}:{reader.line_num}: wrong number of fields")
            rows.append((reader.line_num, row))
        return rows


def _number(text: str, path: Path, line: int, column: str, *, low: float = 0.0, high: float = math.inf) -> float:
    """A finite number in [low, high] from one CSV cell."""
    try:
        value = float(text)
    except ValueError:
        raise PublishedDataError(f"{path}:{line}: column {column!r}: {text!r} is not a number") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise PublishedDataError(f"{path}:{line}: column {column!r}: {value} is not in [{low}, {high}]")
    return value


def _percent(text: str, path: Path, line: int, column: str) -> float:
    """A percent cell (0..100) -> fraction."""
    return _number(text, path, line, column, high=100.0) / 100


def _paper_agent(name: str, paper_names: dict[str, str | None], path: Path, line: int) -> str | None:
    """A paper figure's display name -> the suite's agent key, or None for an agent the suite does not have."""
    if name not in paper_names:
        raise PublishedDataError(f"{path}:{line}: unknown agent {name!r} (map it in the suite's paper_names)")
    return paper_names[name]


def _hours(text: str, path: Path, line: int) -> float:
    """``H:MM:SS`` -> hours."""
    try:
        h, m, s = (int(part) for part in text.split(":"))
    except ValueError:
        raise PublishedDataError(f"{path}:{line}: {text!r} is not a H:MM:SS duration") from None
    return h + m / 60 + s / 3600


def _score_grid(path: Path, benchmarks: list[str], models: set[str], *, raw: bool = False):
    """Yield (line, model, benchmark, cell text) for a model x benchmark CSV, checking models and columns."""
    for line, row in _read_csv(path, ["model", *benchmarks]):
        if row["model"] not in models:
            raise PublishedDataError(f"{path}:{line}: unknown model {row['model']!r}")
        for benchmark in benchmarks:
            text = row[benchmark].strip()
            if not raw:
                _fraction(text, path, line, benchmark)
            yield line, row["model"], benchmark, text


def import_published(*, directory: Path | None = None, suite_id: str = settings.DEFAULT_SUITE) -> ImportReport:
    """Load a suite and the published website data into the warehouse, replacing that suite's rows.

    A suite without a ``published`` section (no website files) is loaded by :func:`import_suite` instead.

    Args:
        directory: the published data folder (layout of aisa-group/posttrainbench-website: ``data/*.csv``,
            ``data/factors.json``, ``paper-plots/data/*.csv``); default: the copy shipped in ``data/published``.
        suite_id: the suite file under ``suites/`` that maps the files to agents (and the paper
            figures' display names to agent keys, ``published.paper_names``).

    Times (hours) come from ``time_aggregated.csv`` and ``aggregated_time_overview.csv``; an agent missing from
    both takes its time from the paper's figure 2 (``fig2_time_vs_performance.csv``), recorded as the row's
    ``source_file``. The paper's ablations (figures 3, 4, 5) go to ``reported_series``.

    Every file is read and validated before anything is written, then all rows go in one transaction, so a
    malformed file leaves the stored data as it was; running it twice stores the same rows.

    Raises:
        PublishedDataError: a missing file, a bad header, a value that is not a fraction (or percent, or
            hours), an unknown model or figure agent; the message names the file and the line.
    """
    root = Path(directory or DEFAULT_PUBLISHED_DIR)
    try:
        suite = load_suite(suite_id)
    except SuiteError as exc:
        raise PublishedDataError(str(exc)) from None
    if "published" not in suite:
        return import_suite(suite_id=suite_id)
    published = suite["published"]
    bench_ids = [b["id"] for b in suite["benchmarks"]]
    base_ids = [m["id"] for m in suite["base_models"]]
    instruct_to_base = {m["instruct_id"]: m["id"] for m in suite["base_models"]}

    weights_path = root / suite["weights"]["file"]
    try:
        weights = json.loads(weights_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise PublishedDataError(f"{weights_path}: cannot read weights: {exc}") from None
    if sorted(weights) != sorted(bench_ids):
        raise PublishedDataError(f"{weights_path}:1: weights for {sorted(weights)}, suite has {sorted(bench_ids)}")

    agents: list[AgentRow] = []
    cells: list[CellRow] = []
    scores: list[ScoreRow] = []
    times: list[ScoreRow] = []
    position = 0

    def rel(path: Path) -> str:
        return str(path.relative_to(root))

    for baseline in published["baselines"]:
        path = root / baseline["file"]
        allowed = set(base_ids) if baseline["rows"] == "base" else set(instruct_to_base)
        all_models = set(base_ids) | set(instruct_to_base)
        for _line, model, benchmark, text in _score_grid(path, bench_ids, all_models):
            if model not in allowed:
                continue
            base = model if baseline["rows"] == "base" else instruct_to_base[model]
            cells.append((baseline["key"], base, benchmark, float(text), None, None, rel(path)))
        agents.append((baseline["key"], baseline["name"], "baseline", None, None, None, position))
        position += 1

    for agent in published["agents"]:
        key = agent["key"]
        if "avg_file" in agent:
            avg_path, std_path = root / agent["avg_file"], root / agent["std_file"]
            stds = {(m, b): float(t) for _, m, b, t in _score_grid(std_path, bench_ids, set(base_ids))}
            for _line, model, benchmark, text in _score_grid(avg_path, bench_ids, set(base_ids)):
                cells.append((key, model, benchmark, float(text), max(stds[(model, benchmark)], 0.0), None,
                              rel(avg_path)))
        else:
            final_path = root / agent["final_file"]
            reasons = {}
            if agent.get("raw_file"):
                raw_path = root / agent["raw_file"]
                for line, model, benchmark, text in _score_grid(raw_path, bench_ids, set(base_ids), raw=True):
                    if text in FALLBACK_LABELS:
                        reasons[(model, benchmark)] = FALLBACK_LABELS[text]
                    else:
                        _fraction(text, raw_path, line, benchmark)
            for _line, model, benchmark, text in _score_grid(final_path, bench_ids, set(base_ids)):
                cells.append((key, model, benchmark, float(text), None, reasons.get((model, benchmark)), rel(final_path)))
        agents.append(
            (key, agent["name"], "agent", agent["scaffold"], agent.get("reasoning_effort"), agent["model_family"], position)
        )
        position += 1

    groups = {a["group"]: a["key"] for a in published["agents"] if "group" in a}
    scores_path = root / published["scores_file"]
    for line, row in _read_csv(scores_path, ["agent", "avg", "std", "n"]):
        if row["agent"] in groups:
            std = _fraction(row["std"], scores_path, line, "std") if row["std"] else None
            scores.append((groups[row["agent"]], _fraction(row["avg"], scores_path, line, "avg"), std, int(row["n"]), rel(scores_path)))

    times_path = root / published["times_file"]
    for line, row in _read_csv(times_path, ["agent", "avg_time", "std_time", "n"]):
        if row["agent"] in groups:
            times.append((groups[row["agent"]], _hours(row["avg_time"], times_path, line),
                          _hours(row["std_time"], times_path, line), int(row["n"]), rel(times_path)))
    by_method = {a["methods"][0]: a["key"] for a in published["agents"] if "final_file" in a}
    method_times_path = root / published["method_times_file"]
    for line, row in _read_csv(method_times_path, ["method", "average_time"]):
        if row["method"] in by_method:
            times.append((by_method[row["method"]], _hours(row["average_time"], method_times_path, line), None, 1, rel(method_times_path)))

    paper_names = published["paper_names"]
    unknown = sorted({k for k in paper_names.values() if k is not None} - {a[0] for a in agents})
    if unknown:
        raise PublishedDataError(f"{SUITES_DIR / suite_id}.json: paper_names maps to unknown agents {unknown}")
    # Sonnet 4.5 has no time in the website's data; the paper's figure 2 has it. Only such gaps are filled.
    timed = {t[0] for t in times}
    runs = {s[0]: s[3] for s in scores}
    paper_times_path = root / published["paper_times_file"]
    for line, row in _read_csv(paper_times_path, ["Agent", "AvgTime", "StdTime"]):
        key = _paper_agent(row["Agent"], paper_names, paper_times_path, line)
        hours = _hours(row["AvgTime"], paper_times_path, line)
        std = _hours(row["StdTime"], paper_times_path, line) if row["StdTime"] else None
        if key is not None and key not in timed:
            times.append((key, hours, std, runs.get(key, 1), rel(paper_times_path)))

    series = _series_rows(root, published["series"], paper_names, rel)

    _check_complete(cells, [a[0] for a in agents], base_ids, bench_ids, root)

    def write(con) -> None:
        for table in ("suites", "benchmarks", "base_models", "agents", "reported_cells", "reported_scores",
                      "reported_times", "reported_series"):
            column = "id" if table == "suites" else "suite"
            con.execute(f"DELETE FROM {table} WHERE {column} = ?", [suite_id])
        con.execute(
            "INSERT INTO suites VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [suite_id, suite["name"], suite["metric"], suite["budget_hours"], suite["hardware"],
             suite["scoring_rule"], suite["description"], suite["weights"]["note"]],
        )
        warehouse.insert_rows(
            con, "benchmarks",
            [(suite_id, b["id"], b["name"], b["metric"], float(weights[b["id"]]), i) for i, b in enumerate(suite["benchmarks"])],
        )
        warehouse.insert_rows(
            con, "base_models",
            [(suite_id, m["id"], m["hf_id"], m["name"], m["instruct_id"], i) for i, m in enumerate(suite["base_models"])],
        )
        warehouse.insert_rows(con, "agents", [(suite_id, *a[:6], "published", a[6]) for a in agents])
        warehouse.insert_rows(con, "reported_cells", [(suite_id, *c) for c in cells])
        warehouse.insert_rows(con, "reported_scores", [(suite_id, *s) for s in scores])
        warehouse.insert_rows(con, "reported_times", [(suite_id, *t) for t in times])
        warehouse.insert_rows(con, "reported_series", [(suite_id, *r) for r in series])

    warehouse.run_in_transaction(write)
    return ImportReport(
        suite=suite_id,
        counts={"benchmarks": len(bench_ids), "base models": len(base_ids), "agents": len(agents),
                "cells": len(cells), "headline scores": len(scores), "times": len(times),
                "series points": len(series)},
    )


def _series_rows(root: Path, files: dict, paper_names: dict[str, str | None], rel) -> list[SeriesRow]:
    """The paper's ablation figures as ``reported_series`` rows (without the suite column).

    ``files`` is the suite's ``published.series``: ``time_budget`` (fig3: Model, TimeBudget in hours, Score as a
    FRACTION), ``reasoning_effort`` (fig5: effort, score and score_std in percent, time_hours, time_std_hours,
    tokens; one agent, named by ``label``, with ``agents`` mapping each effort to an agent key or null) and
    ``model_size`` (fig4: agent, score in percent). Scores are stored as fractions.
    """
    rows: list[SeriesRow] = []
    path = root / files["time_budget"]["file"]
    for position, (line, row) in enumerate(_read_csv(path, ["Model", "TimeBudget", "Score"])):
        rows.append(("time_budget", row["Model"], _paper_agent(row["Model"], paper_names, path, line),
                     _number(row["TimeBudget"], path, line, "TimeBudget"), None,
                     _fraction(row["Score"], path, line, "Score"), None, None, None, None, position, rel(path)))
    effort = files["reasoning_effort"]
    path = root / effort["file"]
    columns = ["effort", "score", "score_std", "time_hours", "time_std_hours", "tokens"]
    for position, (line, row) in enumerate(_read_csv(path, columns)):
        level = row["effort"].strip().lower()
        if level not in effort["agents"]:
            raise PublishedDataError(f"{path}:{line}: unknown reasoning effort {row['effort']!r}")
        rows.append(("reasoning_effort", effort["label"], effort["agents"][level], None, level,
                     _percent(row["score"], path, line, "score"), _percent(row["score_std"], path, line, "score_std"),
                     _number(row["time_hours"], path, line, "time_hours"),
                     _number(row["time_std_hours"], path, line, "time_std_hours"),
                     _number(row["tokens"], path, line, "tokens"), position, rel(path)))
    path = root / files["model_size"]["file"]
    for position, (line, row) in enumerate(_read_csv(path, ["agent", "score"])):
        rows.append(("model_size", row["agent"], _paper_agent(row["agent"], paper_names, path, line), None, None,
                     _percent(row["score"], path, line, "score"), None, None, None, None, position, rel(path)))
    return rows


def _check_complete(cells, agent_keys, base_ids, bench_ids, root: Path) -> None:
    """Every agent needs a cell for every (base model, benchmark): the published method has no partial sums."""
    have = {(c[0], c[1], c[2]) for c in cells}
    for key in agent_keys:
        for model in base_ids:
            for benchmark in bench_ids:
                if (key, model, benchmark) not in have:
                    raise PublishedDataError(f"{root}: agent {key} has no score for {model} on {benchmark}")


SUITE_TABLES = ("suites", "benchmarks", "base_models", "agents", "reported_cells", "reported_scores", "reported_times",
                "reported_series", "reported_facts")
FACT_TOPICS = ("score", "methods", "training_signal", "calibration", "note")


def import_suite(*, suite_id: str) -> ImportReport:
    """Load a suite that ships no website files: its definition and the reported results in the suite file.

    The suite file gives benchmarks (``weight`` each; equal weights where none is given), base models, budget,
    hardware, scoring rule, and ``reported``: ``source`` (where the numbers come from), ``agents`` (per-agent
    rows of the leaderboard: ``key``, ``name``, ``scaffold``, ``model_family``, ``reasoning_effort``, ``cells``:
    a list of ``{base_model, benchmark, value, std}`` with fractions, one per (base model, benchmark); optional
    ``average``, ``std`` and ``runs`` for the headline), ``named_agents`` (agents the source speaks of without
    a score: ``key``, ``name``, ``model_family``; no leaderboard row) and ``facts``: what the source reports
    besides scores, each ``{topic, agent (key or null), quantity, value (number or null for a statement), unit,
    description, quote}`` plus optional ``value_max`` (a range's upper end), ``out_of`` ("2 of 8") and
    ``scope`` ("best trial"); ``topic`` is one of FACT_TOPICS. Nothing is derived: a figure the source does not
    give is not in the file and not stored. Replaces the suite's rows in one transaction; running it twice stores
    the same rows.

    Raises:
        PublishedDataError: no such suite, an agent without a cell for every (base model, benchmark), a value
            that is not a fraction, a fact with an unknown topic or agent or a non-numeric value; the message
            names the suite file.
    """
    path = SUITES_DIR / f"{suite_id}.json"

    def _runs(agent: dict) -> int:
        """The runs behind the agent's published average: 1 when the file says nothing, 0 for ``"runs": null`` (the
        source gives the score but not over how many runs; the column is NOT NULL, the leaderboard reads 0 as
        None and shows "–")."""
        runs = agent.get("runs", 1)
        return 0 if runs is None else int(runs)

    try:
        suite = load_suite(suite_id)
    except SuiteError as exc:
        raise PublishedDataError(str(exc)) from None
    reported = suite.get("reported", {})
    source = reported.get("source", f"suites/{suite_id}.json")
    bench_ids = [b["id"] for b in suite["benchmarks"]]
    base_ids = [m["id"] for m in suite["base_models"]]
    given = [b.get("weight") for b in suite["benchmarks"]]
    weights = [float(w) if w is not None else 1 / len(bench_ids) for w in given]
    agents: list[AgentRow] = []
    cells: list[CellRow] = []
    scores: list[ScoreRow] = []
    for position, agent in enumerate(reported.get("agents", [])):
        agents.append((agent["key"], agent["name"], "agent", agent.get("scaffold"), agent.get("reasoning_effort"),
                       agent.get("model_family"), position))
        for cell in agent.get("cells", []):
            value = _fraction(str(cell["value"]), path, 1, f"{agent['key']} {cell['benchmark']}")
            std = cell.get("std")
            cells.append((agent["key"], cell["base_model"], cell["benchmark"], value, std, None, source))
        if agent.get("average") is not None:
            std = agent.get("std")
            scores.append((agent["key"], _fraction(str(agent["average"]), path, 1, f"{agent['key']} average"),
                           None if std is None else _fraction(str(std), path, 1, f"{agent['key']} std"),
                           _runs(agent), source))
    _check_complete(cells, [a[0] for a in agents], base_ids, bench_ids, path)
    names = {a[0]: a[1] for a in agents} | {a["key"]: a["name"] for a in reported.get("named_agents", [])}
    facts = []
    for position, fact in enumerate(reported.get("facts", [])):
        where = f"{path}: reported.facts[{position}]"
        if fact.get("topic") not in FACT_TOPICS:
            raise PublishedDataError(f"{where}: topic {fact.get('topic')!r} is not one of {', '.join(FACT_TOPICS)}")
        agent = fact.get("agent")
        if agent is not None and agent not in names:
            raise PublishedDataError(f"{where}: names unknown agent {agent!r} (list it in reported.agents or "
                                     "reported.named_agents)")
        numbers = []
        for key in ("value", "value_max", "out_of"):
            value = fact.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value)):
                raise PublishedDataError(f"{where}: {key} {value!r} is not a number")
            numbers.append(None if value is None else float(value))
        facts.append((fact["topic"], agent, names.get(agent), fact["quantity"], *numbers, fact.get("unit"),
                      fact.get("scope"), fact["description"], fact["quote"], source, position))

    def write(con) -> None:
        for table in SUITE_TABLES:
            con.execute(f"DELETE FROM {table} WHERE {'id' if table == 'suites' else 'suite'} = ?", [suite_id])
        con.execute("INSERT INTO suites VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [suite_id, suite["name"], suite["metric"], suite["budget_hours"], suite["hardware"],
                     suite["scoring_rule"], suite["description"], suite.get("weights", {}).get("note", "")])
        warehouse.insert_rows(con, "benchmarks", [(suite_id, b["id"], b["name"], b["metric"], w, i)
                         for i, (b, w) in enumerate(zip(suite["benchmarks"], weights))])
        warehouse.insert_rows(con, "base_models", [(suite_id, m["id"], m["hf_id"], m["name"], m["instruct_id"], i)
                         for i, m in enumerate(suite["base_models"])])
        if agents:
            warehouse.insert_rows(con, "agents", [(suite_id, *a[:6], "published", a[6]) for a in agents])
        if cells:
            warehouse.insert_rows(con, "reported_cells", [(suite_id, *c) for c in cells])
        if scores:
            warehouse.insert_rows(con, "reported_scores", [(suite_id, *r) for r in scores])
        if facts:
            warehouse.insert_rows(con, "reported_facts", [(suite_id, *f) for f in facts])

    warehouse.run_in_transaction(write)
    return ImportReport(suite=suite_id, counts={"benchmarks": len(bench_ids), "base models": len(base_ids),
                                                "agents": len(agents), "cells": len(cells), "facts": len(facts)})
