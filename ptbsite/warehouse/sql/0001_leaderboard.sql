-- Suites and their reported (published) results. Values are fractions in [0, 1]; pages show them x100.
-- No keys or constraints beyond NOT NULL (DuckLake has none): the importer replaces a suite's rows wholesale.
CREATE TABLE suites (
    id VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    budget_hours DOUBLE NOT NULL,
    hardware VARCHAR NOT NULL,
    scoring_rule VARCHAR NOT NULL,
    description VARCHAR NOT NULL,
    weights_note VARCHAR NOT NULL
);
CREATE TABLE benchmarks (
    suite VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    weight DOUBLE NOT NULL,
    position INTEGER NOT NULL
);
CREATE TABLE base_models (
    suite VARCHAR NOT NULL,
    id VARCHAR NOT NULL,          -- short name as in the aggregate CSVs, e.g. Qwen3-1.7B-Base
    hf_id VARCHAR NOT NULL,       -- e.g. Qwen/Qwen3-1.7B-Base
    name VARCHAR NOT NULL,        -- display name, e.g. Qwen3-1.7B
    instruct_id VARCHAR NOT NULL, -- short name of the official instruct model, e.g. Qwen3-1.7B
    position INTEGER NOT NULL
);
CREATE TABLE agents (
    suite VARCHAR NOT NULL,
    key VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,        -- agent | baseline
    scaffold VARCHAR,
    reasoning_effort VARCHAR,
    model_family VARCHAR,
    source VARCHAR NOT NULL,      -- published | runs
    position INTEGER NOT NULL
);
-- One published cell: an agent's score on one benchmark for one base model (mean over its repeated runs).
CREATE TABLE reported_cells (
    suite VARCHAR NOT NULL,
    agent VARCHAR NOT NULL,
    base_model VARCHAR NOT NULL,
    benchmark VARCHAR NOT NULL,
    value DOUBLE NOT NULL,        -- fraction, after the base-model fallback
    std DOUBLE,                   -- sample std over runs (fraction), NULL for single runs
    fallback VARCHAR,             -- NULL, or why the cell holds the base model's score: not_stored | error
    source_file VARCHAR NOT NULL
);
-- Published headline numbers per agent: weighted average and its sample std over runs (fractions).
CREATE TABLE reported_scores (
    suite VARCHAR NOT NULL,
    agent VARCHAR NOT NULL,
    average DOUBLE NOT NULL,
    std DOUBLE,
    runs INTEGER NOT NULL,
    source_file VARCHAR NOT NULL
);
-- Published agent-phase wall time per agent (hours), mean and sample std over runs.
CREATE TABLE reported_times (
    suite VARCHAR NOT NULL,
    agent VARCHAR NOT NULL,
    hours DOUBLE NOT NULL,
    hours_std DOUBLE,
    runs INTEGER NOT NULL,
    source_file VARCHAR NOT NULL
);
