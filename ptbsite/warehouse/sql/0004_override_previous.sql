-- The reviewer audit log (verdict_overrides) records the effective verdict each override replaced:
-- flagged | clean | judge_error (traces.verdicts.effective_flags before the override). NULL on older rows.
-- 0004, not 0003: 0003 is reserved by a branch in flight; versions apply in order, each once.
ALTER TABLE verdict_overrides ADD COLUMN previous VARCHAR;
