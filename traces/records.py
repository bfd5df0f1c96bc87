"""The write models of the run record: one slotted dataclass per warehouse row the ingest stores (a method, a run,
a step and the whole text of a cut step field, a verdict, an evaluation, a facet, a phase, a monitor sample, and
the text rows the word index is built from), and :class:`ParsedRun`, everything one run directory gives.

A record's fields are its table's columns by name (``ptbsite/warehouse/sql/0002_traces.sql``, ``0005_facets.sql``,
``0013_trace_integrity.sql`` and the migrations that add columns); the writer (``traces.services``) inserts them
by those names, so no code keeps a column order. Each record's Arrow schema is derived from its field types
(:func:`arrow_schema`): ``str`` is a string, ``int`` a 64-bit integer, :data:`Int32` a 32-bit one, ``float`` a
double, ``bool`` a boolean, ``datetime`` a microsecond timestamp (naive UTC), ``bytes`` binary; ``X | None`` is
nullable. pyarrow is imported on the first schema built, by a writing process only (bench/web_memory.py).
"""
from __future__ import annotations

import dataclasses
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Union, get_args, get_origin, get_type_hints

if TYPE_CHECKING:
    import pyarrow as pa

Int32 = Annotated[int, "int32"]  # an INTEGER column (an ``int`` field is a BIGINT one)


@dataclass(slots=True)
class MethodRow:
    """A ``methods`` row: one method directory of a results tree and the leaderboard agent it belongs to."""

    TABLE: ClassVar[str] = "methods"

    id: str
    suite: str
    harness_agent: str
    config: str
    budget_hours: float
    gpus: Int32
    experiment: str
    scaffold: str
    agent_key: str
    agent_name: str
    reasoning_effort: str | None
    synthetic: bool
    results_root: str
    ingested_at: datetime


@dataclass(slots=True)
class RunRow:
    """A ``runs`` row: one run directory (column meanings in ``0002_traces.sql`` and the later migrations)."""

    TABLE: ClassVar[str] = "runs"

    id: str
    method: str
    run_dir: str
    suite: str
    benchmark: str
    base_model: str
    base_model_hf: str
    cluster_id: int
    is_latest: bool
    state: str
    state_detail: str
    time_taken_s: Int32 | None
    budget_hours: float
    accuracy: float | None
    metrics_json: str | None
    prompt: str | None
    has_final_model: bool
    eval_attempts: Int32
    trace_file: str | None
    trace_format: str | None
    trace_bytes: int
    step_count: Int32
    started_at: datetime | None
    ended_at: datetime | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    trace_model: str | None
    problems: str
    redaction_warnings: str
    synthetic: bool
    content_hash: str
    ingested_at: datetime
    dir_time: datetime | None
    dir_time_source: str | None
    trace_incomplete: str | None
    rules_version: str | None
    unknown_events: str | None
    secrets_redacted: Int32 | None = None
    chars_replaced: Int32 | None = None


@dataclass(slots=True)
class StepRow:
    """A ``steps`` row: one step of a run's agent or judge trace; ``input``/``output`` cut at
    ``traces.services.STEP_TEXT_CAP`` (``input_bytes``/``output_bytes`` are the whole texts' UTF-8 sizes)."""

    TABLE: ClassVar[str] = "steps"

    run_id: str
    trace: str
    idx: Int32
    time: datetime | None
    elapsed_s: float | None
    kind: str
    tool: str | None
    input: str | None
    output: str
    is_error: bool
    call_id: str | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    line: Int32 | None
    suspicious: str | None
    label: str | None
    input_bytes: int | None
    output_bytes: int | None


@dataclass(slots=True)
class StepTextRow:
    """A ``step_texts`` row: chunk ``chunk`` of the whole UTF-8 text of a step field cut in ``steps``,
    zlib-compressed (``traces.services.TEXT_CHUNK`` bytes before compression)."""

    TABLE: ClassVar[str] = "step_texts"

    run_id: str
    trace: str
    idx: Int32
    field: str
    chunk: Int32
    data: bytes


@dataclass(slots=True)
class WordSourceRow:
    """A text the word index (``traces.search_index.index_rows``) reads: a step's input and output, or the whole
    text of a cut field (``input`` None)."""

    TABLE: ClassVar[str] = "word_sources"  # a relation registered for one statement, never a stored table

    run_id: str
    trace: str
    idx: Int32
    input: str | None
    output: str | None


@dataclass(slots=True)
class VerdictRow:
    """A ``verdicts`` row: one judge's decision on one question about one run (``traces.verdicts.Verdict``)."""

    TABLE: ClassVar[str] = "verdicts"

    run_id: str
    judge: str
    attempt: str
    era: str
    kind: str
    value: str
    flagged: bool | None
    text: str
    note: str | None
    source_file: str | None


@dataclass(slots=True)
class EvaluationRow:
    """An ``evaluations`` row: a score of a run (``accuracy`` a fraction 0..1), the harness's or a rerun's."""

    TABLE: ClassVar[str] = "evaluations"

    id: str
    run_id: str
    origin: str
    accuracy: float
    metrics_json: str
    provenance_json: str
    created_at: datetime


@dataclass(slots=True)
class FacetRow:
    """A ``facets`` row: what a rule found in the agent trace (``ingest.facets``); ``steps`` comma-separated."""

    TABLE: ClassVar[str] = "facets"

    run_id: str
    facet: str
    value: str
    value_num: float | None
    steps: str


@dataclass(slots=True)
class PhaseRow:
    """A ``phases`` row: a span of the agent trace's time (seconds on the steps' ``elapsed_s`` axis)."""

    TABLE: ClassVar[str] = "phases"

    run_id: str
    phase: str
    start_s: float
    end_s: float
    step_from: Int32
    step_to: Int32


@dataclass(slots=True)
class MonitorRow:
    """A ``monitor`` row: one ``system_monitor.log`` sample (GPU utilisation %, memory MiB)."""

    TABLE: ClassVar[str] = "monitor"

    run_id: str
    time: datetime
    t_s: float
    gpu_util: float
    gpu_mem_mib: float
    gpu_mem_total_mib: float


@dataclass(slots=True)
class LateUsage:
    """Token counts to set on a step a writer stored already (a streamed trace's usage that came later)."""

    trace: str
    idx: int
    tokens_in: int | None
    tokens_out: int | None


@dataclass(slots=True)
class StepWrite:
    """One step as a reader hands it to a writer: its ``row``, the ``texts`` rows of a field cut at
    ``vocabulary.STEP_TEXT_CAP`` (its whole text), and ``size``, the characters of text the row holds (what a
    writer's batch counts)."""

    row: StepRow
    texts: list[StepTextRow]
    size: int


@dataclass(slots=True)
class ParsedRun:
    """One run directory read (``ingest.reader.Ingester.parse_run``): its rows, the steps not handed to a
    writer already (``steps``, ``texts``), the usage to set on steps written already (``late_usage``),
    ``problems`` ("path: message" strings) and ``stored_steps`` (step rows of every trace, written or held).

    ``packed``: rows of the lists above already made Arrow tables (:meth:`pack`), by table name: a run read by a
    worker process travels to the storing process so (each table's columns pickled as a few buffers, not one
    object per row), and the writer inserts them with the rows of the lists."""

    run: RunRow
    steps: list[StepRow] = field(default_factory=list)
    texts: list[StepTextRow] = field(default_factory=list)
    verdicts: list[VerdictRow] = field(default_factory=list)
    evaluations: list[EvaluationRow] = field(default_factory=list)
    facets: list[FacetRow] = field(default_factory=list)
    phases: list[PhaseRow] = field(default_factory=list)
    monitor: list[MonitorRow] = field(default_factory=list)
    late_usage: list[LateUsage] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stored_steps: int = 0
    packed: dict[str, pa.Table] = field(default_factory=dict)

    def pack(self) -> None:
        """Move the rows of every non-empty list (steps, texts, verdicts, evaluations, facets, phases, monitor)
        into :attr:`packed` as one Arrow table each (:func:`arrow_table`), the lists left empty; the writer
        inserts the same rows either way (``traces.services.insert_records``)."""
        for name, cls in PACKED:
            rows = getattr(self, name)
            if rows:
                held = [self.packed[cls.TABLE]] if cls.TABLE in self.packed else []
                self.packed[cls.TABLE] = concat(cls, [*held, arrow_table(cls, rows)])
                setattr(self, name, [])


PACKED: tuple[tuple[str, type[Row]], ...] = (
    ("steps", StepRow), ("texts", StepTextRow), ("verdicts", VerdictRow), ("evaluations", EvaluationRow),
    ("facets", FacetRow), ("phases", PhaseRow), ("monitor", MonitorRow))  # ParsedRun's row lists and their class

Row = (MethodRow | RunRow | StepRow | StepTextRow | WordSourceRow | VerdictRow | EvaluationRow | FacetRow | PhaseRow
       | MonitorRow)


@dataclass(frozen=True, slots=True)
class _Field:
    """A field of a write model as its column: its name, Python type (``X | None`` read as ``X``), Arrow type name
    when annotated (:data:`Int32`), and whether it may be None."""

    name: str
    base: Any
    arrow: str | None
    optional: bool


_SHAPES: dict[type, tuple[_Field, ...]] = {}
_SCHEMAS: dict[type, pa.Schema] = {}


def _fields(cls: type[Row]) -> tuple[_Field, ...]:
    """The columns of ``cls``, read from its type hints once."""
    if cls not in _SHAPES:
        hints = get_type_hints(cls, include_extras=True)
        out = []
        for f in dataclasses.fields(cls):
            hint, optional = hints[f.name], False
            if get_origin(hint) in (Union, types.UnionType):
                hint, optional = next(a for a in get_args(hint) if a is not type(None)), True
            arrow = None
            if get_origin(hint) is Annotated:
                hint, arrow = get_args(hint)[0], get_args(hint)[1]
            out.append(_Field(f.name, hint, arrow, optional))
        _SHAPES[cls] = tuple(out)
    return _SHAPES[cls]


def columns(cls: type[Row]) -> tuple[str, ...]:
    """The column names of ``cls``'s table, in field order."""
    return tuple(f.name for f in _fields(cls))


def text_fields(cls: type[Row]) -> tuple[str, ...]:
    """The fields of ``cls`` that hold text (``str`` or ``str | None``)."""
    return tuple(f.name for f in _fields(cls) if f.base is str)


def arrow_schema(cls: type[Row]) -> pa.Schema:
    """The Arrow schema of ``cls``'s rows, derived from its field types (module docstring)."""
    if cls not in _SCHEMAS:
        import pyarrow as pa

        by_type = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_(),
                   datetime: pa.timestamp("us"), bytes: pa.binary()}
        by_name = {"int32": pa.int32()}
        _SCHEMAS[cls] = pa.schema([pa.field(f.name, by_name[f.arrow] if f.arrow else by_type[f.base],
                                            nullable=f.optional) for f in _fields(cls)])
    return _SCHEMAS[cls]


def concat(cls: type[Row], tables: Sequence[pa.Table]) -> pa.Table:
    """``tables`` of ``cls``'s rows (each of :func:`arrow_schema`) as one table, their columns' chunks kept
    (nothing copied); an empty table of the schema when there are none."""
    import pyarrow as pa

    return pa.concat_tables(tables) if tables else arrow_schema(cls).empty_table()


def arrow_table(cls: type[Row], rows: Sequence[Row]) -> pa.Table:
    """``rows`` (all of type ``cls``) as an Arrow table of :func:`arrow_schema`, one column per field."""
    import pyarrow as pa

    schema = arrow_schema(cls)
    names = columns(cls)
    values = list(zip(*map(attrgetter(*names), rows))) if rows else [() for _ in names]  # every row has >1 field
    return pa.Table.from_arrays([pa.array(column, type=f.type) for column, f in zip(values, schema, strict=True)],
                                schema=schema)
