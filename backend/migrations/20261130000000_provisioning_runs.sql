-- Provisioning runs Tower saw complete. Portable between SQLite and PostgreSQL: times are
-- Unix milliseconds, per-step seconds a JSON object. One row per service + start: the
-- first record wins.
CREATE TABLE provisioning_runs (
    service TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    finished_at BIGINT NOT NULL,
    steps TEXT NOT NULL,
    recorded_at BIGINT NOT NULL,
    recorded_by TEXT NOT NULL,
    PRIMARY KEY (service, started_at)
);
CREATE INDEX provisioning_runs_by_finish ON provisioning_runs (finished_at);
CREATE INDEX provisioning_runs_by_kind ON provisioning_runs (kind, finished_at);
