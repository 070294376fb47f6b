-- Where a mirror (`admin mirror`, issue 72) stands, for `status` and for whoever asks: one row, the last mirror's,
-- written by the mirror in each of its transactions (so it is exactly as new as what the store holds) and when it
-- ends. state is 'running' while its session (pid) lives; then how its stream ended. Console bookkeeping, like
-- check_runs: a local table on the coordinator under Citus, never distributed.
CREATE TABLE mirror_progress (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    pid integer NOT NULL,
    started_at timestamptz NOT NULL,
    at_path text NOT NULL,
    state text NOT NULL CHECK (state IN ('running', 'ended', 'cancelled', 'auth_revoked', 'failed')),
    events_applied bigint NOT NULL DEFAULT 0,
    transactions bigint NOT NULL DEFAULT 0,
    last_event_at timestamptz,
    last_heard_at timestamptz,
    seconds_behind double precision,
    updated_at timestamptz NOT NULL
);
