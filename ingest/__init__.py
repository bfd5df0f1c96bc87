"""Reading PostTrainBench results trees into the warehouse (spec section 1): walking the tree, reading each run
directory (state, score, prompt, verdicts, the agent's and judges' traces as typed steps, facets and evidence),
and handing each run (``traces.records.ParsedRun``) to one ``traces.services.RunWriter`` (several runs a
transaction, or one run read as a stream).

Modules: :mod:`.tree` (``ingest_tree``: the walk, the process pool, the report), :mod:`.reader` (``Ingester``:
one run directory into rows), :mod:`.state` (``derive_state``, ``read_accuracy``), :mod:`.reindex` (re-deriving
facets and evidence from stored steps after a rule change).
"""
from .reader import Ingester, RunIngestError, content_hash
from .reindex import ReindexReport, current_versions, reindex
from .state import API_LIMIT_MARKERS, derive_state, read_accuracy
from .tree import SYNTHETIC_MARKER, IngestReport, ingest_tree

__all__ = ["API_LIMIT_MARKERS", "SYNTHETIC_MARKER", "IngestReport", "Ingester", "ReindexReport",
           "RunIngestError", "content_hash", "current_versions", "derive_state", "ingest_tree", "read_accuracy",
           "reindex"]
