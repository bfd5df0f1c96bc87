-- Trace integrity (issue 13): what ingest redacted, repaired and cut, per run and per step.
-- 0013, not the next free number: other branches in flight add their own; versions apply in order, each once.
-- Columns are nullable: runs and steps stored before this migration have NULL (not counted).
ALTER TABLE runs ADD COLUMN secrets_redacted INTEGER;   -- secrets replaced by <omitted-api-key> in the run's files
ALTER TABLE runs ADD COLUMN chars_replaced INTEGER;     -- invalid UTF-8 sequences and lone surrogates -> U+FFFD
ALTER TABLE runs ADD COLUMN trace_incomplete VARCHAR;   -- why the agent trace is incomplete, NULL when it is not
ALTER TABLE runs ADD COLUMN unknown_events VARCHAR;     -- JSON {event type: count} the parser had no rendering for
ALTER TABLE steps ADD COLUMN label VARCHAR;             -- typed event label (rate limit, api retry, compaction ...)
ALTER TABLE steps ADD COLUMN input_bytes BIGINT;        -- UTF-8 size of the whole input (stored text may be cut)
ALTER TABLE steps ADD COLUMN output_bytes BIGINT;       -- UTF-8 size of the whole output
-- The whole text of a step field cut at ingest (traces.services.STEP_TEXT_CAP): its UTF-8 bytes in chunks of
-- traces.services.TEXT_CHUNK bytes, each zlib-compressed, so a range is served without reading the rest.
CREATE TABLE step_texts (
    run_id VARCHAR NOT NULL,
    trace VARCHAR NOT NULL,
    idx INTEGER NOT NULL,
    field VARCHAR NOT NULL,       -- input | output
    chunk INTEGER NOT NULL,       -- 0-based; chunk n holds bytes [n * TEXT_CHUNK, (n + 1) * TEXT_CHUNK)
    data BLOB NOT NULL
);
