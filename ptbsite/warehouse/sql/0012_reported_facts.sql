-- What a suite's source reports besides leaderboard cells (a report's method counts, training signal,
-- calibration ratios, notes), each exactly as the source gives it: a figure the source does not give is not
-- stored, and a statement without a number has a NULL value. Replaces reported_notes, whose value could not be
-- absent. Numbered 0012 after the issue that added it, so that branches in flight with 0006.. do not collide
-- (versions apply each once, in order).
CREATE TABLE reported_facts (
    suite VARCHAR NOT NULL,
    topic VARCHAR NOT NULL,       -- score | methods | training_signal | calibration | note
    agent VARCHAR,                -- the reported agent's key (suite file reported.agents / named_agents), else NULL
    agent_name VARCHAR,           -- its display name, e.g. Claude Fable 5
    quantity VARCHAR NOT NULL,    -- e.g. overoptimism, rollouts_per_step, trials_without_rl
    value DOUBLE,                 -- NULL for a statement the source gives without a number
    value_max DOUBLE,             -- the upper end of a range ("0 to 4 steps"), else NULL
    out_of DOUBLE,                -- "2 of 8 trials": 8, else NULL
    unit VARCHAR,                 -- x (a ratio), fraction, steps, trials, runs, boards, rollouts; NULL for a statement
    scope VARCHAR,                -- what the figure is about, e.g. best trial, all trials
    description VARCHAR NOT NULL, -- the figure in words
    quote VARCHAR NOT NULL,       -- the source's own words
    source VARCHAR NOT NULL,
    position INTEGER NOT NULL
);
DROP TABLE reported_notes;
