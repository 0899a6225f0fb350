//! Provisioning history: SQLite by default (a file in the data dir, WAL, `busy_timeout`),
//! PostgreSQL when the database URL says so. Same migrations (`backend/migrations`), same
//! queries, through sqlx's `Any` driver.
//!
//! Recording is idempotent on service + start: the first record wins, and a repeat — from a
//! second browser or from the backend itself — gets the stored run back.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone as _, Utc};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Executor as _, Row as _};
use tower_shared::provisioning::NEWEST_RUNS;
use tower_shared::snapshot::{Observation, RecordedRun};

/// The observer's memory: by service, by step, when it was first seen running and done.
pub type Sights = BTreeMap<String, BTreeMap<String, Observation>>;

/// The history database.
#[derive(Clone, Debug)]
pub struct History {
    pool: AnyPool,
    backend: Backend,
    /// The locks this process's tasks hold ([`History::try_exclusive`]), by lock number.
    local: Arc<Locks>,
}

type Locks = std::sync::Mutex<std::collections::HashMap<i64, Arc<tokio::sync::Mutex<()>>>>;

/// Which database the history lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("history database migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("history database: a stored run is unreadable: {0}")]
    Corrupt(String),
}

/// Whether a record was new or already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    Inserted,
    AlreadyThere,
    /// Not stored: the service has as many runs as it may ([`History::record`]'s `most`).
    Full,
}

/// How many of one service's runs the typical durations read at most: a service provisioned
/// again and again (or a caller recording runs for one in a loop) moves them no more than
/// two others do.
pub const SAMPLE_PER_SERVICE: usize = 2;

/// How many runs [`History::typical_sample`] reads per kind to find [`NEWEST_RUNS`] of
/// different services.
const SAMPLE_READ: u32 = 200;

const COLUMNS: &str = "service, kind, started_at, finished_at, steps";

impl History {
    /// Opens (creating a SQLite file if needed) and migrates the database at `url`.
    pub async fn connect(url: &str) -> Result<Self, HistoryError> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else {
            Backend::Postgres
        };
        let options = AnyPoolOptions::new()
            .max_connections(match backend {
                // SQLite has one writer; a few readers beside it are plenty.
                Backend::Sqlite => 4,
                Backend::Postgres => 16,
            })
            .acquire_timeout(Duration::from_secs(30));
        let options = if backend == Backend::Sqlite {
            options.after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute("PRAGMA journal_mode = WAL").await?;
                    conn.execute("PRAGMA busy_timeout = 10000").await?;
                    conn.execute("PRAGMA synchronous = NORMAL").await?;
                    Ok(())
                })
            })
        } else {
            options
        };
        let pool = options.connect(url).await?;
        // An older Tower (a rollback) starts on a database a newer one migrated: the
        // migrations only add, so the ones it does not know are left alone.
        let mut migrator = sqlx::migrate!("./migrations");
        migrator.set_ignore_missing(true);
        migrator.run(&pool).await?;
        Ok(Self {
            pool,
            backend,
            local: Arc::default(),
        })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Stores `run` unless a run of the same service and start is stored; returns the
    /// stored run either way.
    /// Stores `run` unless one of its service and start is there (then answers that one),
    /// or the service has `most` runs already (then answers `run` as [`Recorded::Full`]):
    /// one statement, so replicas recording at once store a run once and never past `most`.
    pub async fn record(
        &self,
        run: &RecordedRun,
        by: &str,
        now: DateTime<Utc>,
        most: Option<u32>,
    ) -> Result<(RecordedRun, Recorded), HistoryError> {
        let steps = serde_json::to_string(&run.steps).unwrap_or_else(|_| "{}".to_owned());
        let result = sqlx::query(
            "INSERT INTO provisioning_runs \
             (service, started_at, kind, finished_at, steps, recorded_at, recorded_by) \
             SELECT $1, $2, $3, $4, $5, $6, $7 \
             WHERE (SELECT COUNT(*) FROM provisioning_runs WHERE service = $1) < $8 \
             ON CONFLICT (service, started_at) DO NOTHING",
        )
        .bind(&run.service)
        .bind(run.started_at.timestamp_millis())
        .bind(&run.kind)
        .bind(run.finished_at.timestamp_millis())
        .bind(steps)
        .bind(now.timestamp_millis())
        .bind(by)
        .bind(most.map_or(i64::MAX, i64::from))
        .execute(&self.pool)
        .await?;
        let inserted = result.rows_affected() == 1;
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM provisioning_runs WHERE service = $1 AND started_at = $2"
        ))
        .bind(&run.service)
        .bind(run.started_at.timestamp_millis())
        .fetch_optional(&self.pool)
        .await?;
        Ok(match row {
            Some(row) if inserted => (run_of(&row)?, Recorded::Inserted),
            Some(row) => (run_of(&row)?, Recorded::AlreadyThere),
            None => (run.clone(), Recorded::Full),
        })
    }

    /// The newest `limit` runs (by start), newest first; of one kind when given.
    pub async fn newest(
        &self,
        kind: Option<&str>,
        limit: u32,
    ) -> Result<Vec<RecordedRun>, HistoryError> {
        let rows = match kind {
            Some(kind) => {
                sqlx::query(&format!(
                    "SELECT {COLUMNS} FROM provisioning_runs WHERE kind = $1 \
                     ORDER BY started_at DESC, service ASC LIMIT $2"
                ))
                .bind(kind)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?
            }
            None => {
                sqlx::query(&format!(
                    "SELECT {COLUMNS} FROM provisioning_runs \
                     ORDER BY started_at DESC, service ASC LIMIT $1"
                ))
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?
            }
        };
        rows.iter().map(run_of).collect()
    }

    /// The runs typical durations are read from: the newest [`NEWEST_RUNS`] of each kind in
    /// `kinds` (`None`: of all kinds together), at most [`SAMPLE_PER_SERVICE`] of a service,
    /// without repeats.
    pub async fn typical_sample(
        &self,
        kinds: &[Option<&str>],
    ) -> Result<Vec<RecordedRun>, HistoryError> {
        let mut runs = Vec::new();
        for kind in kinds {
            let mut per_service = std::collections::HashMap::<String, usize>::new();
            runs.extend(
                self.newest(*kind, SAMPLE_READ)
                    .await?
                    .into_iter()
                    .filter(|run| {
                        let taken = per_service.entry(run.service.clone()).or_default();
                        *taken += 1;
                        *taken <= SAMPLE_PER_SERVICE
                    })
                    .take(NEWEST_RUNS),
            );
        }
        runs.sort_by(|a, b| (&a.service, a.started_at).cmp(&(&b.service, b.started_at)));
        runs.dedup_by(|a, b| a.service == b.service && a.started_at == b.started_at);
        Ok(runs)
    }

    /// How many runs are stored.
    pub async fn count(&self) -> Result<i64, HistoryError> {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM provisioning_runs")
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get::<i64, _>("n")?)
    }

    /// Who recorded the run of `service` started at `started_at` (a caller's subject, or
    /// Tower's backend), for audits.
    pub async fn recorded_by(
        &self,
        service: &str,
        started_at: DateTime<Utc>,
    ) -> Result<Option<String>, HistoryError> {
        let row = sqlx::query(
            "SELECT recorded_by FROM provisioning_runs WHERE service = $1 AND started_at = $2",
        )
        .bind(service)
        .bind(started_at.timestamp_millis())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row
            .map(|r| r.try_get::<String, _>("recorded_by"))
            .transpose()?)
    }

    /// Answers a trivial query (for `/readyz`).
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.pool).await.is_ok()
    }

    /// Adds `seen` to the first sights every replica shares (a sight already stored is
    /// kept: the first one wins) and answers them all.
    pub async fn share_sights(&self, seen: &Sights) -> Result<Sights, HistoryError> {
        let millis = |at: Option<DateTime<Utc>>| at.map(|t| t.timestamp_millis());
        let mut tx = self.pool.begin().await?;
        for (service, steps) in seen {
            for (step, sight) in steps {
                sqlx::query(
                    "INSERT INTO first_sights (service, step, running_since, done_at) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (service, step) DO UPDATE SET \
                     running_since = COALESCE(first_sights.running_since, excluded.running_since), \
                     done_at = COALESCE(first_sights.done_at, excluded.done_at)",
                )
                .bind(service.as_str())
                .bind(step.as_str())
                .bind(millis(sight.running_since))
                .bind(millis(sight.done_at))
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        self.sights().await
    }

    /// The first sights every replica shares ([`History::share_sights`]).
    pub async fn sights(&self) -> Result<Sights, HistoryError> {
        let rows = sqlx::query("SELECT service, step, running_since, done_at FROM first_sights")
            .fetch_all(&self.pool)
            .await?;
        let mut sights = Sights::new();
        for row in rows {
            let at = |column: &str| -> Result<Option<DateTime<Utc>>, HistoryError> {
                row.try_get::<Option<i64>, _>(column)?.map(time).transpose()
            };
            sights
                .entry(row.try_get::<String, _>("service")?)
                .or_default()
                .insert(
                    row.try_get::<String, _>("step")?,
                    Observation {
                        running_since: at("running_since")?,
                        done_at: at("done_at")?,
                    },
                );
        }
        Ok(sights)
    }

    /// Takes the lock called `name` if no other replica holds it: singleton work (the
    /// release recorder, a pull request being opened) runs while the [`Lease`] lives.
    ///
    /// On PostgreSQL it is a session advisory lock on a connection of its own, closed when
    /// the lease is dropped — so the lock ends with the lease, or with the process if it
    /// dies. SQLite has one replica by construction (a file beside it). Either way, two tasks
    /// of this process never hold it at once.
    pub async fn try_exclusive(&self, name: &str) -> Result<Option<Lease>, HistoryError> {
        let key = lock_key(name);
        let mutex = Arc::clone(
            self.local
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(key)
                .or_default(),
        );
        let Ok(local) = mutex.try_lock_owned() else {
            return Ok(None);
        };
        let local = Some(LocalLock {
            locks: Arc::clone(&self.local),
            key,
            guard: Some(local),
        });
        if self.backend == Backend::Sqlite {
            return Ok(Some(Lease {
                _held: None,
                _local: local,
            }));
        }
        let mut connection = self.pool.acquire().await?;
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(key)
            .fetch_one(&mut *connection)
            .await?;
        if !taken {
            return Ok(None);
        }
        // Never handed back to the pool still holding the lock.
        connection.close_on_drop();
        Ok(Some(Lease {
            _held: Some(connection),
            _local: local,
        }))
    }

    /// [`History::try_exclusive`], trying again every 50 ms for up to `within`; `None` if
    /// another replica held it all that time.
    pub async fn exclusive(
        &self,
        name: &str,
        within: Duration,
    ) -> Result<Option<Lease>, HistoryError> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(lease) = self.try_exclusive(name).await? {
                return Ok(Some(lease));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A lock one replica holds ([`History::try_exclusive`]); released when dropped.
#[derive(Debug)]
pub struct Lease {
    _held: Option<sqlx::pool::PoolConnection<sqlx::Any>>,
    _local: Option<LocalLock>,
}

/// A lock of this process's, forgotten once nobody holds or waits for it.
#[derive(Debug)]
struct LocalLock {
    locks: Arc<Locks>,
    key: i64,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl Drop for LocalLock {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut locks = self
            .locks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if locks
            .get(&self.key)
            .is_some_and(|mutex| Arc::strong_count(mutex) == 1)
        {
            locks.remove(&self.key);
        }
    }
}

/// The advisory lock number of `name`: the first 8 bytes of its SHA-256, so every replica
/// (and every version) agrees on it.
fn lock_key(name: &str) -> i64 {
    let digest = ring::digest::digest(&ring::digest::SHA256, name.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_ref()[..8]);
    i64::from_be_bytes(first)
}

fn time(millis: i64) -> Result<DateTime<Utc>, HistoryError> {
    Utc.timestamp_millis_opt(millis)
        .single()
        .ok_or_else(|| HistoryError::Corrupt(format!("time {millis}")))
}

fn run_of(row: &AnyRow) -> Result<RecordedRun, HistoryError> {
    let steps: String = row.try_get("steps")?;
    let steps: BTreeMap<String, u64> =
        serde_json::from_str(&steps).map_err(|err| HistoryError::Corrupt(err.to_string()))?;
    Ok(RecordedRun {
        service: row.try_get("service")?,
        kind: row.try_get("kind")?,
        started_at: time(row.try_get("started_at")?)?,
        finished_at: time(row.try_get("finished_at")?)?,
        steps,
    })
}
