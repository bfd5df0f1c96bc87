"""Reading PostTrainBench results trees into the warehouse (spec section 1): walking the tree, reading each run
directory (state, score, prompt, verdicts, the agent's and judges' traces as typed steps, facets and evidence),
and handing each run (``traces.records.ParsedRun``) to one ``traces.services.RunWriter`` (several runs a
transaction, or one run read as a stream, which the writer pulls). Control flows one way: walker -> reader ->
parser generator -> blocks -> files, the writer pulling from the reader (``tests/test_ingest_walk.py``).

Modules: :mod:`.tree` (``ingest_tree``: the walk, the process pool, the report), :mod:`.reader` (``Ingester``:
one run directory into rows), :mod:`.state` (``derive_state``, ``read_accuracy``), :mod:`.reindex` (re-deriving
facets and evidence from stored steps after a rule change); what they read with: :mod:`.parsers` (one generator of
steps per trace format), :mod:`.blocks` (a trace file's text as redacted blocks), :mod:`.redaction`, :mod:`.rules` (the RE2 multi-rule scan), :mod:`.facets`, :mod:`.evidence`,
:mod:`.monitor`. Commands: ``manage.py ingest``, ``manage.py reindex``.

The package imports none of them itself: Django imports every installed app at start, and a web process, which
never ingests, should not load the parsers and compile the rules (the evaluator imports only ``.redaction``).
"""
