-- The version of the trace rules each run's facets, phases and evidence marks were derived with (issue 15):
-- JSON {"evidence": "<16 hex>", "facets": "<16 hex>"} (traces.ingest.reindex.current_versions). `manage.py
-- reindex` re-derives the runs whose versions differ from the code's, from their stored steps.
-- 0015, not the next free number: another branch in flight may add 0014; versions apply in order, each once.
-- NULL for runs stored before this migration: every family is out of date.
ALTER TABLE runs ADD COLUMN rules_version VARCHAR;
