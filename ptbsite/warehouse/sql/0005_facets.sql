-- What the agents did, measured from their traces at ingest (traces/facets.py, traces/monitor.py).
-- Rows are replaced with their run (traces.services.store_run); no keys or constraints (DuckLake has none).
CREATE TABLE facets (
    run_id VARCHAR NOT NULL,
    facet VARCHAR NOT NULL,       -- rule id: sft | lora | ... | library | dataset | training_launches | self_score ...
    value VARCHAR NOT NULL,       -- what matched, or the library / dataset name, or the number as text
    value_num DOUBLE,             -- counts, steps, a fraction for self_score; NULL for presence facets
    steps VARCHAR NOT NULL        -- the supporting agent-trace step indices, comma-separated, ascending
);
-- The agent trace's time split into phases: data | training | evaluation | other | idle.
CREATE TABLE phases (
    run_id VARCHAR NOT NULL,
    phase VARCHAR NOT NULL,
    start_s DOUBLE NOT NULL,      -- seconds since the trace's first timed step (the steps' elapsed_s axis)
    end_s DOUBLE NOT NULL,
    step_from INTEGER NOT NULL,
    step_to INTEGER NOT NULL
);
-- system_monitor.log samples (every 60 s): GPU utilisation (%, mean over GPUs) and memory (MiB, summed).
CREATE TABLE monitor (
    run_id VARCHAR NOT NULL,
    time TIMESTAMP NOT NULL,      -- UTC
    t_s DOUBLE NOT NULL,          -- seconds since the trace's first timed step (else since the first sample)
    gpu_util DOUBLE NOT NULL,
    gpu_mem_mib DOUBLE NOT NULL,
    gpu_mem_total_mib DOUBLE NOT NULL
);
-- Reported observations of a suite's source that are not per-agent scores (e.g. a report's quoted ratios).
CREATE TABLE reported_notes (
    suite VARCHAR NOT NULL,
    quantity VARCHAR NOT NULL,    -- e.g. overoptimism
    description VARCHAR NOT NULL,
    agent VARCHAR,                -- the suite's agent key when the source names one, else NULL
    value DOUBLE NOT NULL,
    unit VARCHAR NOT NULL,        -- e.g. x (a ratio), fraction, hours
    source VARCHAR NOT NULL,
    position INTEGER NOT NULL
);
