-- The public's challenges of a run's verdict (issue 26, traces.challenges): what a visitor wrote, never shown before
-- staff accept it. `steps` the agent-trace step indices the claim cites (comma-separated, validated against the run);
-- `contact` optional, shown to staff only; `address` a salted hash of the sender's address (rate limiting is in the
-- cache; this is for the audit), never the address itself.
CREATE TABLE verdict_challenges (
    id VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    claim VARCHAR NOT NULL,
    steps VARCHAR NOT NULL,
    contact VARCHAR,
    address VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);
-- Staff triage of a challenge, append only (the audit log): action accepted | rejected | resolved, the reviewer and
-- a reason; a resolution links the reviewer's override it made (verdict_overrides row: the run, `kind`,
-- `override_at` = its created_at). A challenge's status is its latest event's action, `open` without one.
CREATE TABLE challenge_events (
    challenge_id VARCHAR NOT NULL,
    action VARCHAR NOT NULL,
    reason VARCHAR NOT NULL,
    reviewer VARCHAR NOT NULL,
    override_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL
);
