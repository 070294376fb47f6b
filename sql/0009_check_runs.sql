-- The history of `check --record`: one row per run, written once when the run ends (passed, found violations,
-- or failed half-way), so that recording needs INSERT on this table and nothing else: no sequence (the console
-- makes the id), no UPDATE. `check --history` and `check --fail-on new` read it (SELECT).
--
-- checks holds the run's results in the order they ran, one object per check:
--   [{"check": "like_count", "violations": 4, "seconds": 0.012, "tripped": true}, ...]
-- "tripped" says whether the check failed the run (over its --allow threshold, or risen with --fail-on new).
-- Console bookkeeping, like schema_migrations: a local table on the coordinator under Citus, never distributed.
CREATE TABLE check_runs (
    run_id uuid PRIMARY KEY,
    started_at timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    run_by text NOT NULL,
    client text NOT NULL,
    console_version text NOT NULL,
    exit_status smallint NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('passed', 'violations', 'failed')),
    error text,
    checks jsonb NOT NULL CHECK (jsonb_typeof(checks) = 'array')
);

CREATE INDEX check_runs_started_at ON check_runs (started_at);
