-- Runs ingested from results trees, their trace steps, verdicts and evaluations (the traces app).
-- Ids are deterministic (derived from method and run directory names), so re-ingesting replaces, never adds.
CREATE TABLE methods (
    id VARCHAR NOT NULL,              -- the method directory name, e.g. claude_claude-opus-4-6_10h_run2
    suite VARCHAR NOT NULL,
    harness_agent VARCHAR NOT NULL,   -- folder under agents/ in the harness, e.g. claude_non_api
    config VARCHAR NOT NULL,          -- model config as in the name (config_safe), e.g. claude-opus-4-6_1m_
    budget_hours DOUBLE NOT NULL,
    gpus INTEGER NOT NULL,
    experiment VARCHAR NOT NULL,      -- e.g. _run2, may be empty
    scaffold VARCHAR NOT NULL,
    agent_key VARCHAR NOT NULL,       -- leaderboard agent this method belongs to (known agent or derived)
    agent_name VARCHAR NOT NULL,
    reasoning_effort VARCHAR,
    synthetic BOOLEAN NOT NULL,
    results_root VARCHAR NOT NULL,
    ingested_at TIMESTAMP NOT NULL
);
CREATE TABLE runs (
    id VARCHAR NOT NULL,              -- 16 hex chars of sha256("<method>/<run dir>")
    method VARCHAR NOT NULL,
    run_dir VARCHAR NOT NULL,
    suite VARCHAR NOT NULL,
    benchmark VARCHAR NOT NULL,
    base_model VARCHAR NOT NULL,      -- short id, e.g. Qwen3-1.7B-Base
    base_model_hf VARCHAR NOT NULL,   -- e.g. Qwen/Qwen3-1.7B-Base
    cluster_id BIGINT NOT NULL,
    is_latest BOOLEAN NOT NULL,       -- highest cluster id of its (method, benchmark, base model)
    state VARCHAR NOT NULL,           -- scored | no_final_model | eval_failed | never_finished | timed_out | cuda_failure | api_limit
    state_detail VARCHAR NOT NULL,
    time_taken_s INTEGER,             -- agent phase wall time, seconds (time_taken.txt)
    budget_hours DOUBLE NOT NULL,
    accuracy DOUBLE,                  -- metrics.json "accuracy", fraction, NULL when not scored
    metrics_json VARCHAR,
    prompt VARCHAR,
    has_final_model BOOLEAN NOT NULL,
    eval_attempts INTEGER NOT NULL,
    trace_file VARCHAR,
    trace_format VARCHAR,
    trace_bytes BIGINT NOT NULL,
    step_count INTEGER NOT NULL,
    started_at TIMESTAMP,             -- first timestamp seen in the trace (UTC)
    ended_at TIMESTAMP,
    tokens_in BIGINT,
    tokens_out BIGINT,
    cost_usd DOUBLE,
    trace_model VARCHAR,
    problems VARCHAR NOT NULL,        -- JSON list of "file:line: message"
    redaction_warnings VARCHAR NOT NULL, -- JSON list, shown to admins
    synthetic BOOLEAN NOT NULL,
    content_hash VARCHAR NOT NULL,
    ingested_at TIMESTAMP NOT NULL
);
CREATE TABLE steps (
    run_id VARCHAR NOT NULL,
    trace VARCHAR NOT NULL,           -- agent | judge:<judge id>[:rerun]
    idx INTEGER NOT NULL,
    time TIMESTAMP,
    elapsed_s DOUBLE,                 -- seconds since the trace's first timestamp
    kind VARCHAR NOT NULL,
    tool VARCHAR,
    input VARCHAR,
    output VARCHAR NOT NULL,
    is_error BOOLEAN NOT NULL,
    call_id VARCHAR,
    tokens_in BIGINT,
    tokens_out BIGINT,
    cost_usd DOUBLE,
    line INTEGER,
    suspicious VARCHAR                -- comma-separated evidence rule ids, NULL when none
);
CREATE TABLE verdicts (
    run_id VARCHAR NOT NULL,
    judge VARCHAR NOT NULL,           -- codex (txt era) | gpt5_4 | kimi | api | ...
    attempt VARCHAR NOT NULL,         -- original | rerun
    era VARCHAR NOT NULL,             -- txt | judge_result | judgement_json
    kind VARCHAR NOT NULL,            -- contamination | disallowed_model | disallowed_api_usage | ...
    value VARCHAR NOT NULL,           -- clean | flagged | missing | malformed | unavailable
    flagged BOOLEAN,                  -- NULL when missing, malformed or unavailable
    text VARCHAR NOT NULL,            -- the verdict line or the justification
    note VARCHAR,
    source_file VARCHAR
);
CREATE TABLE verdict_overrides (
    run_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    flagged BOOLEAN NOT NULL,
    reason VARCHAR NOT NULL,
    reviewer VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE TABLE evaluations (
    id VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    origin VARCHAR NOT NULL,          -- original | rerun
    accuracy DOUBLE NOT NULL,         -- fraction
    metrics_json VARCHAR NOT NULL,
    provenance_json VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);
