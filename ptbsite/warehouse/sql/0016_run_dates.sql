-- The run's own date when its agent trace has no timestamps (issue 17): the run directory's time as ingest found
-- it, UTC. `dir_time_source` says where it came from: `timestamp.txt` (the harness's ISO 8601 stamp, baseline
-- runs) or `file times` (the earliest modification time of the files directly in the run directory: the first
-- file the harness wrote). Pages show runs.started_at (the trace's first timestamp) first, this failing that, and
-- label runs.ingested_at as the ingest time.
-- NULL for runs stored before this migration: the next ingest of the tree fills it in, also for unchanged runs.
ALTER TABLE runs ADD COLUMN dir_time TIMESTAMP;
ALTER TABLE runs ADD COLUMN dir_time_source VARCHAR;
