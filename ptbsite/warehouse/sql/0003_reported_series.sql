-- Published ablation series (the paper's figures): one row per plotted point, kept with its source file.
-- No keys or constraints beyond NOT NULL (DuckLake has none): the importer replaces a suite's rows wholesale.
CREATE TABLE reported_series (
    suite VARCHAR NOT NULL,
    series VARCHAR NOT NULL,      -- time_budget | reasoning_effort | model_size
    label VARCHAR NOT NULL,       -- the figure's display name, e.g. Claude Opus 4.5
    agent VARCHAR,                -- the suite's agent key where the figure's agent is one of them, else NULL
    budget_hours DOUBLE,          -- time_budget: the time limit the agent was given (hours)
    reasoning_effort VARCHAR,     -- reasoning_effort: low | medium | high
    score DOUBLE NOT NULL,        -- weighted average, fraction
    score_std DOUBLE,             -- sample std over runs (fraction), NULL where not published
    hours DOUBLE,                 -- wall time used (hours), NULL where not published
    hours_std DOUBLE,
    tokens DOUBLE,                -- mean tokens per run, NULL where not published
    position INTEGER NOT NULL,    -- order of the row in its source file
    source_file VARCHAR NOT NULL
);
