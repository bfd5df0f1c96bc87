"""The typed models of the leaderboard: one model per concept, returned by ``leaderboard.selectors`` and served as
they are by ``leaderboard.api`` (``response=``). Scores are fractions in Python; the fields typed ``Percent`` are
served in percent (the API's documented unit, ``ptbsite.units``) and the pages show them with the ``pct`` filter."""
from __future__ import annotations

from pydantic import BaseModel as PydanticModel
from pydantic import ConfigDict, Field, computed_field

from traces.reported import ReportedFact
from ptbsite.units import Percent, PercentOrNone


def judging_text(verdicts: str, reviews: bool) -> str:
    """A judging rule (``traces.verdicts.JUDGING_RULES``) and whether reviewers' overrides are on top, in words:
    ``"flagged when any of the run's judges flags; reviewers' overrides applied on top"``."""
    from traces.verdicts import JUDGING_RULE_TEXT

    rule = JUDGING_RULE_TEXT.get(verdicts, verdicts)
    return f"{rule}; " + ("reviewers' overrides applied on top" if reviews else "reviewers' overrides not applied")


class Model(PydanticModel):
    model_config = ConfigDict(from_attributes=True)


SORT_KEYS = ("rank", "agent", "average", "runs")
FALLBACK_TEXT = {
    "not_stored": "the agent left no final model",
    "error": "the evaluation of the final model failed",
    "not_available": "the agent never finished",
    "missing": "no run",
    "flagged": "a judge flagged the run",
    "judge_error": "the judge's verdict is missing or malformed",
    "timed_out": "the job was killed at its time limit",
    "cuda_failure": "the CUDA check failed",
    "api_limit": "the agent hit its API limit",
    "facet": "the run did not use the filtered facet",
}
SCORING_RULE_TEXT = {"final_model": "the final model", "best_checkpoint": "the best submitted checkpoint"}


class Benchmark(Model):
    id: str
    name: str
    metric: str
    weight: float


class BaseModel(Model):
    id: str
    hf_id: str
    name: str
    instruct_id: str


class Cell(Model):
    """One benchmark column of a row: its score (fraction), its spread, and the fallbacks behind it."""

    score: Percent
    std: PercentOrNone = None
    shade: float = 0.0
    fallbacks: list[tuple[str, str]] = Field(default_factory=list)  # (base model name, reason code)
    run_ids: list[str] = Field(default_factory=list, description="the ingested runs behind the cell (rows from runs)")

    @property
    def fallback_note(self) -> str:
        """Hover text: which base models fell back to their zero-shot score, and why."""
        return "; ".join(f"{model}: base-model score used, {FALLBACK_TEXT.get(r, r)}" for model, r in self.fallbacks)


class Row(Model):
    """One leaderboard line. ``average``/``std``/``delta`` fractions (percent in JSON); ``rank`` None for
    baselines."""

    key: str
    agent: str
    kind: str
    scaffold: str | None
    reasoning_effort: str | None
    model_family: str | None
    average: Percent
    std: PercentOrNone
    runs: int | None  # None: the source gives the score but not over how many runs (FrogsGame's GPT-5.5)
    cells: dict[str, Cell] = Field(exclude=True)  # served as ``scores``, ``stds`` and ``fallbacks``
    rank: int | None = None
    source: str = "published"       # published | runs
    n_runs: int = 0                 # ingested runs behind a runs row (one per cell of a sweep at most)
    n_scored: int = 0               # of those, the runs that count with their own score (not flagged, scored)
    n_cells: int = 0                # runs rows: sweeps (``runs``) x base models x benchmarks of the view
    synthetic: bool = False         # every run behind the row is generated demo data
    overridden: bool = False        # a reviewer overrode a verdict of a run behind the row
    delta: PercentOrNone = None     # runs row minus the published row of the same agent (percent points in JSON)
    rank_change: int | None = None  # a judging view but the default: rank in the default view minus rank in this one
    baseline_source: str | None = None  # runs rows: where the fallback scores came from: tree | published | mixed

    @property
    def run_cells(self) -> dict[str, int]:
        """A runs row's cells in words' numbers: ``per_run`` cells of one run of the suite (base models x
        benchmarks), ``scored`` / ``not_scored`` (flagged, failed or unfinished: the base model's score) of the
        ingested runs, ``no_run`` cells without one (the base model's score too). ``n_runs`` = scored +
        not_scored; ``n_cells`` = that + no_run = ``runs`` x per_run."""
        return {"per_run": self.n_cells // self.runs if self.runs else 0, "scored": self.n_scored,
                "not_scored": self.n_runs - self.n_scored, "no_run": self.n_cells - self.n_runs}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def scores(self) -> dict[str, Percent]:
        """Benchmark id -> the cell's score (fraction; percent in JSON)."""
        return {bid: cell.score for bid, cell in self.cells.items()}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def stds(self) -> dict[str, PercentOrNone]:
        """Benchmark id -> the "±" under that benchmark (fraction, percent in JSON; definitions in
        ``Leaderboard.std_notes``)."""
        return {bid: cell.std for bid, cell in self.cells.items()}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fallbacks(self) -> dict[str, list[dict[str, str]]]:
        """Benchmark id -> the base models whose cell holds the base model's zero-shot score, with the reason
        (``{"base_model", "reason"}``); only benchmarks with a fallback."""
        return {bid: [{"base_model": m, "reason": reason} for m, reason in cell.fallbacks]
                for bid, cell in self.cells.items() if cell.fallbacks}


class Leaderboard(Model):
    suite: str
    suite_name: str
    benchmarks: list[Benchmark]
    base_models: list[BaseModel]
    base_model: str | None
    sort: str
    direction: str
    rows: list[Row]
    weights_note: str
    derived_weights: dict[str, float]
    source: str = "published"
    apply_flags: bool = True
    verdicts: str = "era"           # the judging rule of the rows from runs (traces.verdicts.JUDGING_RULES)
    reviews: bool = True            # reviewers' overrides applied on top
    description: str = ""
    metric: str = ""
    budget_hours: float | None = None
    hardware: str = ""
    scoring_rule: str = ""
    facet: str | None = None
    reported: list[ReportedFact] = Field(default_factory=list)
    reported_named_only: list[str] = Field(default_factory=list)  # agents the source gives figures but no score
    fallback_baselines: list[FallbackBaseline] = Field(default_factory=list)
    # The suite's agent runs in the warehouse (0: no view from runs, no facet to narrow it). Not served: the
    # leaderboard JSON is part of the static export's site fingerprint, which a run added or removed must not change.
    runs_ingested: int = Field(default=0, exclude=True)
    # Whether any agent of the suite or row of the view names a scaffold / a reasoning effort: FrogsGame's source
    # names neither, so its page has no empty Scaffold and Effort columns (every view of a suite has the same ones).
    has_scaffolds: bool = True
    has_efforts: bool = True

    @property
    def cells_per_run(self) -> int:
        """The cells one run of the whole suite fills in this view: benchmarks x base models (one base model's view: 1)."""
        return len(self.benchmarks) * (1 if self.base_model else len(self.base_models))

    @property
    def judging_view(self) -> bool:
        """A judging rule other than the default (``verdicts`` not ``era``, or ``reviews`` off): it applies to
        the rows computed from runs only (published rows have no per-run verdicts)."""
        return (self.verdicts, self.reviews) != ("era", True)

    @property
    def rank_changes(self) -> bool:
        """Some row can carry ``rank_change``: a judging view other than the default that shows rows from runs
        (``source`` runs or all; the published rows alone have none, and show no Rank Δ column)."""
        return self.judging_view and self.source != "published"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdicts_text(self) -> str:
        """The judging rule of the rows from runs in words, with or without the reviewers' overrides."""
        return judging_text(self.verdicts, self.reviews)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def std_notes(self) -> dict[str, str]:
        """What "±" means in this view, per row source (``published`` / ``runs``): the two views define the spread
        under a benchmark differently, and this says which is which."""
        if self.base_model is None:
            return {
                "published": "± of the average: the published sample std (n-1) over the agent's runs of its weighted "
                             "metric (single_metrics_aggregated.csv). ± under a benchmark: the mean over base models of "
                             "the per-cell sample std over runs (aggregated_std_<agent>.csv), the website's display "
                             "convention, not a pooled std.",
                "runs": "± of the average: the sample std (n-1) over the agent's runs (seeds) of the weighted metric, as "
                        "single_metrics_aggregated.csv. ± under a benchmark: the sample std over runs of that "
                        "benchmark's mean over base models.",
            }
        return {
            "published": "± of the score: sqrt(sum over benchmarks of weight² × std²) of this base model's per-cell "
                         "stds, the website's error bar for one model. ± under a benchmark: the per-cell sample std "
                         "over runs (aggregated_std_<agent>.csv).",
            "runs": "± of the score: the sample std (n-1) over the agent's runs of its weighted score on this base "
                    "model. ± under a benchmark: the per-cell sample std over runs (as aggregated_std_<agent>.csv).",
        }

    @property
    def published_has_std(self) -> bool:
        """Whether a published row has a spread at all (a suite whose source gives no std shows no definition)."""
        return any(r.std is not None or any(c.std is not None for c in r.cells.values())
                   for r in self.rows if r.source == "published")

    @property
    def cell_std_text(self) -> dict[str, str]:
        """The "±" under a benchmark in a few words, per row source (the hover text of a cell)."""
        if self.base_model is not None:
            return {"published": "per-cell std over runs", "runs": "per-cell std over runs"}
        return {"published": "mean over base models of the per-cell std over runs",
                "runs": "std over runs of the mean over base models"}

    @property
    def scoring_text(self) -> str:
        """What is scored, in words (``SCORING_RULE_TEXT``), e.g. "the best submitted checkpoint"."""
        return SCORING_RULE_TEXT.get(self.scoring_rule, self.scoring_rule)


class FallbackBaseline(Model):
    """Where the base-model scores that stand in for failed, flagged or missing runs come from, per results tree.

    ``results_root``: the tree's folder name (the last part of the path the ingest was given; never the path on
    the server). ``kind``: ``tree`` (the tree's own ``baseline_zeroshot/`` runs, as upstream's ``aggregate_final.py``),
    ``published`` (the suite's published zero-shot baseline; the tree has none) or ``none`` (no baseline at all:
    a fallback cell scores 0). ``tree_cells``: cells the tree's baseline scores; ``published_cells``: cells of
    the suite's grid it lacks (or left unscored), for which the published baseline stands in.
    """

    results_root: str
    kind: str
    tree_cells: int
    published_cells: int
    methods: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def text(self) -> str:
        """Where the fallback scores come from, in words, as the leaderboard page says it."""
        if self.kind == "tree":
            extra = (f"; for {self.published_cells} cell{'s' if self.published_cells != 1 else ''} it lacks, the "
                     "published zero-shot baseline") if self.published_cells else ""
            return f"this tree's own baseline_zeroshot/ runs ({self.tree_cells} cells){extra}"
        if self.kind == "published":
            return "the published zero-shot baseline (the tree has no baseline_zeroshot/ runs)"
        return "none: the suite has no zero-shot baseline, so a cell that falls back scores 0"
