-- What Tower saw first of the steps only its own sight can time (the catalog entry
-- appearing, a rollout turning healthy, a request PR's times): shared by every replica on
-- the database, the first sight of each kept, so that all of them answer alike and a
-- replica started later knows what the others saw. Times in epoch milliseconds.
CREATE TABLE IF NOT EXISTS first_sights (
    service TEXT NOT NULL,
    step TEXT NOT NULL,
    running_since BIGINT,
    done_at BIGINT,
    PRIMARY KEY (service, step)
);
