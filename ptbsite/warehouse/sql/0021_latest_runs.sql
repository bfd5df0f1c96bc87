-- What the pages over a suite's latest runs read of each of them (issue 24: the leaderboard from runs, its
-- fallback baselines, the analysis, the usage plot), kept as data at write time: one row per latest run (is_latest)
-- of every suite, baselines included, with its score, verdicts, overrides, facets and seconds per phase already
-- gathered, so a page reads one small table instead of runs, evaluations, verdicts, overrides, facets and phases
-- (whose reads grew with every run). The view latest_run_rows is the one definition of a row: every write that
-- changes a row's inputs (an ingest batch, a rerun's evaluation, a reviewer's override, a re-run judge, a reindex
-- of facets) replaces the rows of the runs or cells it touched from it in its own transaction
-- (traces.services.refresh_latest_runs); this migration fills the table for the runs stored before it.
-- score: the newest evaluation that is not an exploratory rerun (traces.selectors.runs.SCORE_SQL, the run's
-- score); newest_accuracy: the newest evaluation of any origin (what a baseline run supplies the analysis).
-- verdicts: JSON list of {judge, attempt, era, kind, value, flagged} ordered by era, judge, attempt, kind;
-- overrides: JSON list of {kind, flagged} oldest first (NULL: none); facets: the run's distinct facet names,
-- sorted, each between commas (',grpo,library,sft,'; NULL: none); self_score: the agent's self-reported score
-- (fraction); traced: the trace's time is split into phases; <phase>_s: seconds in each phase of
-- traces.vocabulary.PHASES (NULL: none; tests/test_latest_runs.py checks the names); idle_stretches: how many.
-- Scalars, not lists: a page reads them without converting a list per run (K=90: 38 against 13 CPU ms).
CREATE VIEW latest_run_rows AS
SELECT r.suite, r.id AS run_id, r.method, r.benchmark, r.base_model, r.state, e.score, e.newest_accuracy,
    r.time_taken_s, r.budget_hours, r.synthetic, r.trace_format, r.tokens_in, r.tokens_out, r.cost_usd,
    v.verdicts, o.overrides, f.facets, f.self_score, p.traced, p.data_s, p.training_s, p.evaluation_s, p.other_s,
    p.idle_s, p.idle_stretches
FROM runs r
LEFT JOIN LATERAL (SELECT max_by(e.accuracy, e.created_at) FILTER (WHERE e.origin NOT IN ('rerun-exploratory',
        'rerun-partial')) AS score, max_by(e.accuracy, e.created_at) AS newest_accuracy
    FROM evaluations e WHERE e.run_id = r.id) e ON true
LEFT JOIN LATERAL (SELECT CAST(to_json(list(struct_pack(judge := v.judge, attempt := v.attempt, era := v.era,
        kind := v.kind, value := v.value, flagged := v.flagged) ORDER BY v.era, v.judge, v.attempt, v.kind))
        AS VARCHAR) AS verdicts
    FROM verdicts v WHERE v.run_id = r.id) v ON true
LEFT JOIN LATERAL (SELECT CAST(to_json(list(struct_pack(kind := o.kind, flagged := o.flagged) ORDER BY o.created_at))
        AS VARCHAR) AS overrides
    FROM verdict_overrides o WHERE o.run_id = r.id) o ON true
LEFT JOIN LATERAL (SELECT ',' || string_agg(DISTINCT f.facet, ',' ORDER BY f.facet) || ',' AS facets,
        max(f.value_num) FILTER (WHERE f.facet = 'self_score') AS self_score
    FROM facets f WHERE f.run_id = r.id) f ON true
LEFT JOIN LATERAL (SELECT count(*) > 0 AS traced,
        sum(p.end_s - p.start_s) FILTER (WHERE p.phase = 'data') AS data_s,
        sum(p.end_s - p.start_s) FILTER (WHERE p.phase = 'training') AS training_s,
        sum(p.end_s - p.start_s) FILTER (WHERE p.phase = 'evaluation') AS evaluation_s,
        sum(p.end_s - p.start_s) FILTER (WHERE p.phase = 'other') AS other_s,
        sum(p.end_s - p.start_s) FILTER (WHERE p.phase = 'idle') AS idle_s,
        count(*) FILTER (WHERE p.phase = 'idle') AS idle_stretches
    FROM phases p WHERE p.run_id = r.id) p ON true
WHERE r.is_latest;
CREATE TABLE latest_runs AS SELECT * FROM latest_run_rows ORDER BY suite, method, benchmark, base_model;
