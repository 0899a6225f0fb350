//! The steady fleet: apps provisioned long ago, released again and again through dev,
//! staging and prod. Each app releases on its own cadence: a build on `main`, the new
//! image in dev, an hour later in staging, three hours later a release PR to prod merged
//! and rolled out. A few apps' prod rollouts show each kind of rollout ([`Role`]): a canary
//! paused at 40 % while a background AnalysisRun measures its error rate, a canary whose
//! step analysis fails and aborts, a blue-green preview waiting for promotion, a canary that
//! completes. Build TaskRuns carry Tekton Chains' annotations — signed, unsigned, or failed
//! ([`Chains`]).
//!
//! Which apps exist, their kinds and cadences come from a seed; everything else is a
//! function of world time, like every story.

use base64::Engine as _;
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

mod builds;
mod git;
mod rollouts;
mod runtime;

use super::objects::{self, condition, ts, RunRef, RunState};
use super::{CatalogEntity, PullRequest, RolloutAction, Story};

/// Environments in promotion order, and the cluster each runs on.
pub const ENVIRONMENTS: [(&str, &str); 3] = [("dev", "dev"), ("staging", "prod"), ("prod", "prod")];
/// Environments on a cluster each, as a large platform runs them ([`SteadyFleet::sized`]).
pub const ENVIRONMENTS_APART: [(&str, &str); 3] =
    [("dev", "dev"), ("staging", "staging"), ("prod", "prod")];

const NAMES: [&str; 30] = [
    "billing",
    "catalog-api",
    "checkout",
    "search",
    "recommender",
    "inventory",
    "payments",
    "notifications",
    "auth-gateway",
    "profile",
    "reviews",
    "shipping",
    "pricing",
    "carts",
    "wishlist",
    "loyalty",
    "invoices",
    "returns",
    "media",
    "geo",
    "tax",
    "fraud-check",
    "mailer",
    "reports",
    "audit-log",
    "feature-flags",
    "webhooks",
    "ledger-sync",
    "quotes",
    "status-page",
];
/// The paused canary's name: `flight-api`, as in the vision.
pub const PAUSED_CANARY: &str = "flight-api";
/// The demo's app whose staging and prod move only when someone promotes in Git: its
/// newest build waits in dev ([`SteadyApp::held`]).
pub const AWAITING_PROMOTION: &str = "storefront";
/// How long before the fleet's start the held app's staging and prod last moved by
/// themselves, and its cadence (so a build or two wait in dev at the start).
const HELD_FOR: i64 = 4 * 3_600;
const HELD_CADENCE: i64 = 3 * 3_600;
/// One step of a canary, as the Rollout's spec writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CanaryStep {
    Weight(u32),
    /// A pause of so many seconds, or `None`: until someone resumes it.
    Pause(Option<i64>),
    Analysis,
}

use CanaryStep::{Analysis as Analyse, Pause, Weight};

/// The paused canary's steps (and the steady apps', which promote at once): 20 % for ten
/// minutes, 40 % until someone resumes it, 80 % for five minutes.
const PAUSING_STEPS: [CanaryStep; 6] = [
    Weight(20),
    Pause(Some(600)),
    Weight(40),
    Pause(None),
    Weight(80),
    Pause(Some(300)),
];
/// A canary that completes — and every release promoted in Git rolls out so: 20 % for ten
/// minutes, 40 % for ten, 80 % for five, then it is the stable version.
const WALKING_STEPS: [CanaryStep; 6] = [
    Weight(20),
    Pause(Some(600)),
    Weight(40),
    Pause(Some(600)),
    Weight(80),
    Pause(Some(300)),
];
/// The aborting canary: a step analysis at 20 %.
const ANALYSED_STEPS: [CanaryStep; 5] = [
    Weight(20),
    Analyse,
    Weight(40),
    Pause(Some(600)),
    Weight(80),
];
const KINDS: [&str; 4] = ["NodeJS", "SpringBoot", "Python", "Go"];
const BUILD_TASKS: [&str; 4] = ["fetch-source", "unit-tests", "build-image", "update-gitops"];
/// A busy app's pull-request pipeline: one starts every [`PR_EVERY`] seconds, each task
/// takes [`PR_TASK_TAKES`]; the newest [`PR_RUNS_KEPT`] are kept (Tekton's pruner).
const PR_TASKS: [&str; 3] = ["fetch-source", "lint", "unit-tests"];
pub const PR_EVERY: i64 = 600;
const PR_TASK_TAKES: i64 = 80;
pub const PR_RUNS_KEPT: i64 = 320;
/// The newest pull-request runs whose TaskRuns keep their pods (and logs): three hours'
/// worth. Older ones are gone, as a pod garbage collector leaves them.
pub const PR_PODS_KEPT: i64 = 18;
/// A build takes this long; a release reaches staging and prod this long after it.
pub const BUILD_TAKES: i64 = 6 * 60;
const TO_STAGING: i64 = 3_600;
const TO_PROD: i64 = 3 * 3_600;
/// The older ReplicaSets each environment of a demo app keeps, scaled to zero.
const OLD_SETS_KEPT: i64 = 3;
/// The canary's analysis measures every 5 minutes.
const MEASURE_EVERY: i64 = 300;

/// Argo Rollouts' words for a step analysis that failed `failed` measurements.
fn step_failure(failed: i64) -> String {
    format!(
        "Metric \"error-rate\" assessed Failed due to failed ({failed}) > failureLimit ({})",
        STEP_FAILURES - 1
    )
}

/// The release a ReplicaSet is of (the revision Argo Rollouts annotates it with).
fn revision_of(replica_set: &Value) -> Option<i64> {
    replica_set["metadata"]["annotations"]["rollout.argoproj.io/revision"]
        .as_str()?
        .parse()
        .ok()
}

/// A canary's pods for `weight` % of a 3-replica app (Argo Rollouts rounds up; the stable
/// ReplicaSet stays whole behind a traffic router).
fn canary_replicas(weight: u32) -> u32 {
    (3 * weight).div_ceil(100)
}

/// A small, stable random sequence (SplitMix64), so a seed means the same fleet in every
/// version of the simulator.
#[derive(Clone, Copy, Debug)]
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What an app's prod rollouts do, so the demo shows every kind of rollout Tower explains.
/// Each plays out from the moment a release reaches prod ([`SteadyApp::prod_rollout_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Promoted at once (most of the fleet).
    Steady,
    /// A canary at 20 % for ten minutes, then paused at 40 % waiting for a promotion (until
    /// the next release reaches prod), a background analysis measuring its error rate every
    /// five minutes.
    PausedCanary,
    /// A canary whose step analysis fails three measurements, a minute apart, and aborts the
    /// rollout back to stable.
    AbortedCanary,
    /// Blue-green: the new version runs as a preview, waiting for promotion.
    BlueGreen,
    /// A canary that walks 20 → 40 → 80 % and completes after 25 minutes.
    CompletingCanary,
}

/// What is wrong with what the platform made for an app (the Config tab's read-only half).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trouble {
    /// Its prod ExternalSecret stopped refreshing: the provider refuses, the last good
    /// refresh lies [`STALE_FOR`] seconds before the fleet's start (its interval is an hour).
    StaleSecret,
    /// The Infisical Project its XR composes fails to sync: the provider's quota error.
    FailingComposed,
    /// The release running in prod at the fleet's start (and every one after) is slower:
    /// p99 latency about 910 ms instead of 230 ms, and a prod pod of it is OOMKilled
    /// [`OOM_AFTER`] seconds after it arrives (three restarts).
    Regressed,
    /// Prod answered a third of its requests with errors for [`OUTAGE_LASTS`] seconds,
    /// [`OUTAGE_BEFORE`] seconds before the fleet's start, then recovered.
    Outage,
}

/// How long before the demo starts every app was provisioned.
pub const PROVISIONED_DAYS: i64 = 40;

/// The fleet's start, for apps provisioned `long_ago`.
fn fleet_start(long_ago: DateTime<Utc>) -> DateTime<Utc> {
    long_ago + Duration::days(PROVISIONED_DAYS)
}

/// When the [`Trouble::Outage`] began and ended, for apps provisioned `long_ago`.
fn outage(long_ago: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let began = fleet_start(long_ago) - Duration::seconds(OUTAGE_BEFORE);
    (began, began + Duration::seconds(OUTAGE_LASTS))
}
/// When the regressed release's pod is OOMKilled, after it arrives.
pub const OOM_AFTER: i64 = 40 * 60;
/// The outage: when it began before the fleet's start, and how long it lasted.
pub const OUTAGE_BEFORE: i64 = 2 * 3_600;
pub const OUTAGE_LASTS: i64 = 12 * 60;

/// How long before the fleet's start the stale secret last refreshed.
pub const STALE_FOR: i64 = 3 * 3_600;
/// The provider's error on the failing composed Project.
pub const PROJECT_ERROR: &str =
    "cannot create Infisical project: 403 Forbidden: the organization's project quota is reached";

/// What Tekton Chains does with an app's builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chains {
    /// Signs them: provenance, signature, a public Rekor entry; the build publishes an SBOM.
    Signs,
    /// Is not set up for the app's namespace: nothing signed, no SBOM.
    Absent,
    /// Tries and gives up (`chains.tekton.dev/signed: failed`).
    Fails,
}

/// One app of the fleet.
#[derive(Clone, Debug)]
pub struct SteadyApp {
    pub name: String,
    pub kind: &'static str,
    /// Seconds between releases.
    pub cadence: i64,
    /// Where in its cadence the app was at the epoch.
    pub offset: i64,
    pub role: Role,
    pub chains: Chains,
    /// Its environments in promotion order, and the cluster each runs on.
    pub environments: &'static [(&'static str, &'static str)],
    /// Its runs as a real platform keeps them: every build's TaskRuns and
    /// Pipelines-as-Code's keys (the demo's fleet; the scale fleet keeps the lean runs).
    pub detailed: bool,
    /// Pull-request pipelines every ten minutes, the last [`PR_RUNS_KEPT`] kept: an app
    /// whose runs take pages to list.
    pub busy: bool,
    /// From this moment its releases reach staging and prod only when promoted in Git
    /// ([`Promoted`]); before it, by themselves like every app's.
    pub held: Option<DateTime<Utc>>,
    /// The catalog group that owns it (`team-a`, or `team-b` for every fourth app).
    pub owner: &'static str,
    /// What is wrong with what the platform made for it, if anything (the demo's fleet:
    /// the seventh app's secret is stale, the tenth's composed Project fails).
    pub trouble: Option<Trouble>,
}

/// A release Git put in an environment: a commit (or a merged pull request) changing the
/// environment's `glidepath/envs/<env>.yaml` on `main` to its image, at `at`. Argo CD
/// syncs it then and the Rollout walks it in as a canary ([`PROMOTED_WALK`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Promoted {
    env: &'static str,
    release: Release,
    at: DateTime<Utc>,
}

/// What runs in an environment: the release, since when, and — when Git put it there by
/// a promotion — the release it replaced.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    release: Release,
    at: DateTime<Utc>,
    replaced: Option<Release>,
}

/// The steady fleet.
#[derive(Clone, Debug)]
pub struct SteadyFleet {
    pub apps: Vec<SteadyApp>,
    /// When every app was provisioned (long before the demo starts).
    pub provisioned: DateTime<Utc>,
}

impl SteadyFleet {
    /// About 30 apps chosen by `seed`, provisioned 40 days before `start`: the third is the
    /// paused canary ([`PAUSED_CANARY`]), the sixth the aborted one, the ninth blue-green, the twelfth a canary
    /// that completes; every fifth app's builds are unsigned, every seventh's signing fails.
    pub fn new(seed: u64, start: DateTime<Utc>) -> Self {
        let mut rng = SplitMix(seed);
        let count = 26 + rng.below(5) as usize;
        let mut names: Vec<&str> = NAMES.to_vec();
        for i in (1..names.len()).rev() {
            names.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let apps = names
            .into_iter()
            .take(count)
            .enumerate()
            // The vision's canary keeps its name in every fleet.
            .map(|(i, name)| {
                let chosen = match i {
                    1 => AWAITING_PROMOTION,
                    2 => PAUSED_CANARY,
                    _ => name,
                };
                let app = SteadyApp {
                    detailed: true,
                    busy: i == 0,
                    trouble: match i {
                        3 => Some(Trouble::Regressed),
                        4 => Some(Trouble::Outage),
                        6 => Some(Trouble::StaleSecret),
                        9 => Some(Trouble::FailingComposed),
                        _ => None,
                    },
                    ..SteadyApp::chosen(i, chosen, &mut rng)
                };
                if i == 1 {
                    SteadyApp {
                        held: Some(start - Duration::seconds(HELD_FOR)),
                        cadence: HELD_CADENCE,
                        ..app
                    }
                } else {
                    app
                }
            })
            .collect();
        Self {
            apps,
            provisioned: start - Duration::days(PROVISIONED_DAYS),
        }
    }

    /// `count` apps named `app-00000`…, for scale tests: every fiftieth plays each
    /// [`Role`] the demo's fleet plays once (the third of each fifty is a paused canary, …);
    /// each environment on its own cluster ([`ENVIRONMENTS_APART`]).
    pub fn sized(seed: u64, start: DateTime<Utc>, count: usize) -> Self {
        let mut rng = SplitMix(seed);
        let apps = (0..count)
            .map(|i| SteadyApp {
                environments: &ENVIRONMENTS_APART,
                ..SteadyApp::chosen(i % 50, &format!("app-{i:05}"), &mut rng)
            })
            .collect();
        Self {
            apps,
            provisioned: start - Duration::days(PROVISIONED_DAYS),
        }
    }

    /// The app playing `role`, if the fleet has one.
    pub fn app(&self, role: Role) -> Option<&SteadyApp> {
        self.apps.iter().find(|a| a.role == role)
    }

    /// The app with `trouble`, if the fleet has one.
    pub fn troubled(&self, trouble: Trouble) -> Option<&SteadyApp> {
        self.apps.iter().find(|a| a.trouble == Some(trouble))
    }
}

/// A release of an app: number `n` built at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Release {
    n: i64,
    at: DateTime<Utc>,
}

/// Where a canary is: its step, the canary's weight, since when it pauses.
#[derive(Clone, Copy, Debug)]
struct CanaryAt {
    step: u32,
    weight: u32,
    paused_since: Option<DateTime<Utc>>,
}

/// What a rollout of a release is doing.
#[derive(Clone, Copy, Debug)]
enum Prod {
    /// The stable version: a canary that `completed` then, or promoted at once (`None`).
    Promoted {
        completed: Option<DateTime<Utc>>,
    },
    Canary(CanaryAt),
    /// The step analysis started `since` is measuring (`measured` so far), the canary at
    /// 20 %.
    Analysing {
        since: DateTime<Utc>,
        measured: i64,
    },
    /// Aborted at `at`: by its step analysis (started then), or by hand (`None`).
    Aborted {
        at: DateTime<Utc>,
        analysis: Option<DateTime<Utc>>,
    },
    Preview {
        since: DateTime<Utc>,
    },
}

impl Prod {
    fn canary(step: usize, weight: u32, since: DateTime<Utc>) -> Self {
        Self::Canary(CanaryAt {
            step: u32::try_from(step).unwrap_or(u32::MAX),
            weight,
            paused_since: Some(since),
        })
    }
}

/// A Rollout action Argo CD ran (`POST …/resource/actions/v2`) on the rollout of
/// `release` in `env`, at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acted {
    env: &'static str,
    release: i64,
    action: RolloutAction,
    at: DateTime<Utc>,
}

/// The aborting canary's step analysis: a measurement a minute, failing from the first;
/// the third failure (over `failureLimit: 2`) fails the run and aborts the rollout.
const STEP_MEASURE_EVERY: i64 = 60;
const STEP_FAILURES: i64 = 3;

impl SteadyApp {
    /// The app at place `i` of a fleet (its role and Chains follow from the place), its kind
    /// and cadence drawn from `rng`.
    fn chosen(i: usize, name: &str, rng: &mut SplitMix) -> Self {
        Self {
            name: name.to_owned(),
            kind: KINDS[rng.below(KINDS.len() as u64) as usize],
            cadence: (4 + rng.below(9) as i64) * 3_600,
            offset: rng.below(12 * 3_600) as i64,
            role: match i {
                2 => Role::PausedCanary,
                5 => Role::AbortedCanary,
                8 => Role::BlueGreen,
                11 => Role::CompletingCanary,
                _ => Role::Steady,
            },
            chains: match i {
                i if i % 5 == 4 => Chains::Absent,
                i if i % 7 == 6 => Chains::Fails,
                _ => Chains::Signs,
            },
            environments: &ENVIRONMENTS,
            detailed: false,
            busy: false,
            held: None,
            owner: if i % 4 == 3 { "team-b" } else { "team-a" },
            trouble: None,
        }
    }

    /// The environment whose namespace `namespace` is (`app-<name>-<env>`).
    fn env_of(&self, namespace: &str) -> Option<&'static str> {
        let env = namespace
            .strip_prefix("app-")?
            .strip_prefix(self.name.as_str())?
            .strip_prefix('-')?;
        self.environments
            .iter()
            .find(|(e, _)| *e == env)
            .map(|(e, _)| *e)
    }

    /// The first moment after `now` at which anything this app shows (objects, pull
    /// requests) changes: a release starting, a build task finishing, a release reaching an
    /// environment, its PR opening or merging, a prod rollout's step or measurement. Until
    /// then [`SteadyApp::objects`] and [`SteadyApp::pull_requests`] answer as at `now`.
    pub fn next_change(
        &self,
        now: DateTime<Utc>,
        promoted: &[Promoted],
        acted: &[Acted],
    ) -> DateTime<Utc> {
        let per_task = BUILD_TAKES / BUILD_TASKS.len() as i64;
        let prod = Self::reaches("prod");
        let mut offsets: Vec<i64> = (1..=BUILD_TASKS.len() as i64)
            .map(|k| k * per_task)
            .chain([Self::reaches("dev"), Self::reaches("staging"), prod])
            .collect();
        offsets.extend(Self::changes(self.role).into_iter().map(|o| prod + o));
        if self.trouble == Some(Trouble::Regressed) {
            offsets.push(prod + OOM_AFTER);
        }
        let current = self.release_before(now, 0);
        let pr_next = self.busy.then(|| {
            // A run starts (and the oldest goes) each slot; each task ends in turn.
            let slot = now.timestamp().div_euclid(PR_EVERY) * PR_EVERY;
            let into = now.timestamp() - slot;
            let next = (1..=PR_TASKS.len() as i64)
                .map(|k| k * PR_TASK_TAKES)
                .find(|t| *t > into)
                .unwrap_or(PR_EVERY);
            DateTime::from_timestamp(slot + next, 0).unwrap_or(now)
        });
        // The next release starts a build; the last few releases' events may lie ahead.
        let mut next = current.at + Duration::seconds(self.cadence);
        let reach = offsets.iter().copied().max().unwrap_or(0);
        let back = reach / self.cadence + 1;
        for k in 0..=back {
            let at = current.at - Duration::seconds(k * self.cadence);
            for offset in &offsets {
                let t = at + Duration::seconds(*offset);
                if t > now && t < next {
                    next = t;
                }
            }
        }
        // A promoted release's canary walks on; a rollout Argo CD acted on plays on from then.
        let walking = promoted.iter().flat_map(|p| {
            Self::changes(Role::CompletingCanary)
                .into_iter()
                .map(move |o| p.at + Duration::seconds(o))
        });
        let acting = acted.iter().flat_map(|a| {
            Self::changes_after_action(self.role)
                .into_iter()
                .chain(Self::changes_after_action(Role::CompletingCanary))
                .map(move |o| a.at + Duration::seconds(o))
        });
        let next = walking
            .chain(acting)
            .filter(|t| *t > now)
            .fold(next, DateTime::min);
        // Its ExternalSecrets refresh at the top of each hour.
        let next = if self.detailed {
            let hour = DateTime::from_timestamp((now.timestamp().div_euclid(3_600) + 1) * 3_600, 0)
                .unwrap_or(next);
            next.min(hour)
        } else {
            next
        };
        pr_next.map_or(next, |p| p.min(next))
    }

    /// When (seconds from its start) a rollout playing `role` changes by itself: each
    /// timed pause ending until an untimed one, each measurement of its analysis.
    fn changes(role: Role) -> Vec<i64> {
        let mut out = Vec::new();
        match role {
            Role::Steady | Role::BlueGreen => {}
            Role::PausedCanary | Role::CompletingCanary => {
                let mut at = 0;
                for step in Self::steps(role) {
                    match step {
                        Pause(Some(takes)) => {
                            at += takes;
                            out.push(at);
                        }
                        Pause(None) => break,
                        _ => {}
                    }
                }
                if role == Role::PausedCanary {
                    out.extend((1..48).map(|i| i * MEASURE_EVERY));
                }
            }
            Role::AbortedCanary => out.extend(
                (1..STEP_FAILURES)
                    .map(|i| i * STEP_MEASURE_EVERY)
                    .chain([(STEP_FAILURES - 1) * STEP_MEASURE_EVERY + 1]),
            ),
        }
        out
    }

    /// When (seconds from an action Argo CD ran on it) a rollout playing `role` may change:
    /// as when it started, and each run of timed pauses ending from any step on.
    fn changes_after_action(role: Role) -> Vec<i64> {
        let pauses: Vec<i64> = Self::steps(role)
            .iter()
            .filter_map(|step| match step {
                Pause(Some(takes)) => Some(*takes),
                _ => None,
            })
            .collect();
        let mut out = Self::changes(role);
        for from in 0..pauses.len() {
            for to in from..pauses.len() {
                out.push(pauses[from..=to].iter().sum());
            }
        }
        out
    }

    fn objects(
        &self,
        now: DateTime<Utc>,
        long_ago: DateTime<Utc>,
        promoted: &[Promoted],
        acted: &[Acted],
    ) -> Vec<(String, Value)> {
        let name = self.name.as_str();
        let made = if self.detailed {
            self.made(now, long_ago)
        } else {
            Vec::new()
        };
        let refs: Vec<Value> = made
            .iter()
            .filter(|(_, o)| o["metadata"]["labels"]["crossplane.io/composite"] == name)
            .map(|(_, o)| {
                json!({"apiVersion": o["apiVersion"], "kind": o["kind"],
                                 "name": o["metadata"]["name"]})
            })
            .collect();
        let mut out = vec![(
            "dev".to_owned(),
            json!({"apiVersion": "catalog.hangar.io/v1alpha1", "kind": self.kind,
                "metadata": {"name": name, "creationTimestamp": ts(long_ago),
                             "labels": {"hangar.io/team": self.owner}},
                "spec": {"parameters": {"name": name}, "crossplane": {"resourceRefs": refs}},
                "status": {"conditions": [
                    condition("Synced", true, "ReconcileSuccess", long_ago, None),
                    condition("Ready", true, "Available", long_ago, None),
                    condition("DevClusterReady", true, "Available", long_ago, None),
                    condition("CicdOnboarded", true, "Available", long_ago, None)]}}),
        )];
        out.extend(made);
        out.extend(self.builds(now));
        for &(env, cluster) in self.environments {
            let (arrival, started, role, prod) = self.rollout_in(env, now, promoted, acted);
            let release = arrival.release;
            let namespace = format!("app-{name}-{env}");
            let health = match prod {
                Prod::Promoted { .. } => "Healthy",
                Prod::Canary(_) | Prod::Preview { .. } => "Suspended",
                Prod::Analysing { .. } => "Progressing",
                Prod::Aborted { .. } => "Degraded",
            };
            let mut app = objects::application(
                &format!("{name}-{env}"),
                "argocd",
                "Synced",
                health,
                release.at,
                &format!("https://github.com/acme/gitops-{name}.git"),
            );
            app["metadata"]["labels"] =
                json!({"hangar.io/app": name, "hangar.io/environment": env});
            app["spec"]["destination"] = json!({"name": cluster, "namespace": namespace});
            app["status"]["summary"] = json!({"images": [self.image(release)]});
            // The GitOps commit the sync applied, and when: the one that brought the release.
            let revision = match arrival.replaced {
                Some(_) => crate::store::uid_of(&format!("{name}/{env}/{}", arrival.at))
                    .replace('-', "")[..32]
                    .to_owned(),
                None => self.commit(Release {
                    n: release.n * 7 + 3,
                    ..release
                }),
            };
            let synced = arrival.at;
            app["status"]["sync"]["revision"] = json!(revision);
            app["status"]["operationState"] = json!({"phase": "Succeeded",
                "message": "successfully synced (all tasks run)",
                "startedAt": ts(synced - Duration::seconds(4)), "finishedAt": ts(synced),
                "syncResult": {"revision": revision}});
            out.push(("dev".to_owned(), app));
            out.push((cluster.to_owned(), objects::namespace(&namespace)));
            let stable = arrival.replaced.unwrap_or_else(|| self.previous(release));
            let (rollout, replica_sets) = match prod {
                Prod::Promoted { .. } => {
                    let mut sets = vec![self.replica_set(&namespace, release, 3)];
                    // A canary that just completed keeps the old version scaled to zero.
                    if role == Role::CompletingCanary
                        && (env == "prod" || arrival.replaced.is_some())
                    {
                        sets.push(self.replica_set(&namespace, stable, 0));
                    }
                    (self.healthy_rollout(&namespace, release, role), sets)
                }
                Prod::Canary(at) => (
                    self.canary_rollout(&namespace, (release, stable), at, now, role),
                    vec![
                        self.replica_set(&namespace, stable, 3),
                        self.replica_set(&namespace, release, canary_replicas(at.weight)),
                    ],
                ),
                Prod::Analysing { since, .. } => (
                    self.analysing_rollout(&namespace, (release, stable), since),
                    vec![
                        self.replica_set(&namespace, stable, 3),
                        self.replica_set(&namespace, release, canary_replicas(20)),
                    ],
                ),
                Prod::Aborted { at, analysis } => (
                    self.aborted_rollout(
                        &namespace,
                        (release, stable),
                        at,
                        (role, analysis.is_some()),
                    ),
                    vec![
                        self.replica_set(&namespace, stable, 3),
                        self.replica_set(&namespace, release, 0),
                    ],
                ),
                Prod::Preview { since } => (
                    self.preview_rollout(&namespace, (release, stable), since),
                    vec![
                        self.replica_set(&namespace, stable, 3),
                        self.replica_set(&namespace, release, 3),
                    ],
                ),
            };
            out.push((cluster.to_owned(), rollout));
            // Each ReplicaSet was made when its release arrived here; Argo Rollouts keeps
            // the older ones scaled to zero (`revisionHistoryLimit`): what ran here before.
            let stable_since = match arrival.replaced {
                Some(_) => {
                    self.arrival(env, arrival.at - Duration::seconds(1), promoted)
                        .at
                }
                None => stable.at + Duration::seconds(Self::reaches(env)),
            };
            let mut replica_sets: Vec<Value> = replica_sets
                .into_iter()
                .map(|mut rs| {
                    let since = if revision_of(&rs) == Some(release.n) {
                        arrival.at
                    } else {
                        stable_since
                    };
                    rs["metadata"]["creationTimestamp"] = json!(ts(since));
                    rs
                })
                .collect();
            if self.detailed {
                let mut older = vec![(stable, stable_since)];
                older.extend((1..=OLD_SETS_KEPT).map(|back| {
                    let old = Release {
                        n: stable.n - back,
                        at: stable.at - Duration::seconds(back * self.cadence),
                    };
                    (old, old.at + Duration::seconds(Self::reaches(env)))
                }));
                for (old, since) in older {
                    if old.n != release.n
                        && !replica_sets.iter().any(|rs| revision_of(rs) == Some(old.n))
                    {
                        let mut rs = self.replica_set(&namespace, old, 0);
                        rs["metadata"]["creationTimestamp"] = json!(ts(since));
                        replica_sets.push(rs);
                    }
                }
            }
            if self.detailed {
                let running = (&arrival, &prod, long_ago);
                out.extend(
                    self.runtime_objects(env, &namespace, &replica_sets, running, now)
                        .into_iter()
                        .map(|o| (cluster.to_owned(), o)),
                );
            }
            out.extend(replica_sets.into_iter().map(|rs| (cluster.to_owned(), rs)));
            match prod {
                Prod::Canary(_) if role == Role::PausedCanary => out.push((
                    cluster.to_owned(),
                    self.analysis_run(&namespace, release, started.unwrap_or(now), now),
                )),
                Prod::Analysing { since, measured } => out.push((
                    cluster.to_owned(),
                    self.step_analysis_run(&namespace, release, since, measured, None),
                )),
                Prod::Aborted {
                    at,
                    analysis: Some(since),
                } => out.push((
                    cluster.to_owned(),
                    self.step_analysis_run(&namespace, release, since, STEP_FAILURES, Some(at)),
                )),
                _ => {}
            }
        }
        out
    }

    /// What the platform made for the app besides its runs and rollouts: the resources its
    /// XR composes (its GitOps repository, catalog file and Infisical project) and an
    /// ExternalSecret per environment, refreshed at the top of every hour — as its
    /// [`Trouble`] says, if it has one.
    fn made(&self, now: DateTime<Utc>, long_ago: DateTime<Utc>) -> Vec<(String, Value)> {
        let name = self.name.as_str();
        let gitops = format!("gitops-{name}");
        let mut out = vec![
            (
                "dev".to_owned(),
                objects::repository(
                    name,
                    &format!("{name}-gitops"),
                    &gitops,
                    Some(long_ago),
                    long_ago,
                    None,
                ),
            ),
            (
                "dev".to_owned(),
                objects::repository_file(
                    name,
                    &format!("{name}-catalog-info"),
                    &gitops,
                    "catalog-info.yaml",
                    Some(long_ago),
                    long_ago,
                ),
            ),
        ];
        let failing = self.trouble == Some(Trouble::FailingComposed);
        let project_conditions = if failing {
            vec![
                condition("Ready", false, "Creating", long_ago, None),
                condition(
                    "Synced",
                    false,
                    "ReconcileError",
                    long_ago,
                    Some(PROJECT_ERROR),
                ),
            ]
        } else {
            vec![
                condition("Ready", true, "Available", long_ago, None),
                condition("Synced", true, "ReconcileSuccess", long_ago, None),
            ]
        };
        out.push((
            "dev".to_owned(),
            objects::project(
                name,
                (&format!("{name}-secrets"), "tenants"),
                name,
                name,
                project_conditions,
            ),
        ));
        // ESO refreshes every hour: the last refresh is the hour's top.
        let hour = DateTime::from_timestamp(now.timestamp().div_euclid(3_600) * 3_600, 0)
            .unwrap_or(now)
            .max(long_ago);
        for &(env, cluster) in self.environments {
            let stale = env == "prod" && self.trouble == Some(Trouble::StaleSecret);
            let (refreshed, ready) = if stale {
                let at = long_ago + Duration::days(40) - Duration::seconds(STALE_FOR);
                (
                    at,
                    condition(
                        "Ready",
                        false,
                        "SecretSyncedError",
                        at,
                        Some("could not get secret data from provider"),
                    ),
                )
            } else {
                (
                    hour,
                    condition(
                        "Ready",
                        true,
                        "SecretSynced",
                        long_ago,
                        Some("secret synced"),
                    ),
                )
            };
            out.push((
                cluster.to_owned(),
                json!({"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
                    "metadata": {"name": format!("{name}-secrets"),
                                 "namespace": format!("app-{name}-{env}")},
                    "spec": {"refreshInterval": "1h",
                             "secretStoreRef": {"kind": "SecretStore", "name": "infisical"},
                             "target": {"name": format!("{name}-env")},
                             "data": [{"secretKey": "DATABASE_URL", "remoteRef": {"key": "DATABASE_URL"}},
                                      {"secretKey": "PAYMENTS_API_KEY", "remoteRef": {"key": "PAYMENTS_API_KEY"}}]},
                    "status": {"refreshTime": ts(refreshed), "syncedResourceVersion": "1-sim",
                               "binding": {"name": format!("{name}-env")},
                               "conditions": [ready]}}),
            ));
        }
        out
    }
}

/// One app of the fleet as a story of its own, so the platform asks it again only when
/// something of it changes ([`Story::unchanged_until`]), with the promotions Git made.
#[derive(Debug)]
pub struct FleetApp {
    pub app: SteadyApp,
    provisioned: DateTime<Utc>,
    /// Oldest first.
    promoted: std::sync::Mutex<Vec<Promoted>>,
    /// The Rollout actions Argo CD ran, oldest first.
    acted: std::sync::Mutex<Vec<Acted>>,
}

impl FleetApp {
    fn promoted(&self) -> Vec<Promoted> {
        self.promoted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn acted(&self) -> Vec<Acted> {
        self.acted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl SteadyFleet {
    /// Each app as its own story.
    pub fn into_stories(self) -> Vec<Box<dyn Story>> {
        let provisioned = self.provisioned;
        self.apps
            .into_iter()
            .map(|app| {
                Box::new(FleetApp {
                    app,
                    provisioned,
                    promoted: std::sync::Mutex::default(),
                    acted: std::sync::Mutex::default(),
                }) as Box<dyn Story>
            })
            .collect()
    }
}

impl SteadyApp {
    fn catalog_entity(&self, provisioned: DateTime<Utc>) -> CatalogEntity {
        CatalogEntity {
            entity: super::component(
                &self.name,
                "service",
                &format!("group:default/{}", self.owner),
            ),
            readable_since: provisioned,
        }
    }
}

impl Story for FleetApp {
    fn objects_at(&self, now: DateTime<Utc>) -> Vec<(String, Value)> {
        self.app
            .objects(now, self.provisioned, &self.promoted(), &self.acted())
    }

    fn signals(&self, namespace: &str, at: DateTime<Utc>) -> Option<super::Signals> {
        let env = self.app.env_of(namespace)?;
        Some(
            self.app
                .signals(env, at, self.provisioned, &self.promoted(), &self.acted()),
        )
    }

    fn files_at(&self, now: DateTime<Utc>) -> Vec<super::RepoFile> {
        self.app.files(now, &self.promoted())
    }

    fn written_to_main(&self, repo: &str, path: &str, content: &str, at: DateTime<Utc>) -> bool {
        let mut promoted = self
            .promoted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(promotion) = self.app.promotion(repo, path, content, at, &promoted) else {
            // Its own file, already naming what runs there: nothing to sync.
            return self
                .app
                .files(at, &promoted)
                .iter()
                .any(|f| f.repo == repo && f.path == path && f.content == content);
        };
        promoted.push(promotion);
        true
    }

    fn rollout_action(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
        action: RolloutAction,
        at: DateTime<Utc>,
    ) -> bool {
        let Some(&(env, _)) = self.app.environments.iter().find(|(env, on)| {
            *on == cluster && name == self.app.name && namespace == format!("app-{name}-{env}")
        }) else {
            return false;
        };
        let release = self.app.arrival(env, at, &self.promoted()).release.n;
        self.acted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Acted {
                env,
                release,
                action,
                at,
            });
        true
    }

    fn pull_requests_at(&self, now: DateTime<Utc>) -> Vec<PullRequest> {
        self.app.pull_requests(now)
    }

    fn catalog_at(&self, _now: DateTime<Utc>) -> Vec<CatalogEntity> {
        vec![self.app.catalog_entity(self.provisioned)]
    }

    fn unchanged_until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        Some(self.app.next_change(now, &self.promoted(), &self.acted()))
    }

    fn commits_between(
        &self,
        repo: &str,
        base: &str,
        head: &str,
        now: DateTime<Utc>,
    ) -> Option<(Vec<super::RepoCommit>, Vec<super::RepoCommit>)> {
        (self.app.detailed && repo == format!("acme/{}", self.app.name))
            .then(|| self.app.commits_between(base, head, now))
            .flatten()
    }
}

impl Story for SteadyFleet {
    fn objects_at(&self, now: DateTime<Utc>) -> Vec<(String, Value)> {
        self.apps
            .iter()
            .flat_map(|app| app.objects(now, self.provisioned, &[], &[]))
            .collect()
    }

    fn signals(&self, namespace: &str, at: DateTime<Utc>) -> Option<super::Signals> {
        self.apps.iter().find_map(|app| {
            let env = app.env_of(namespace)?;
            Some(app.signals(env, at, self.provisioned, &[], &[]))
        })
    }

    fn pull_requests_at(&self, now: DateTime<Utc>) -> Vec<PullRequest> {
        self.apps
            .iter()
            .flat_map(|app| app.pull_requests(now))
            .collect()
    }

    fn catalog_at(&self, _now: DateTime<Utc>) -> Vec<CatalogEntity> {
        self.apps
            .iter()
            .map(|app| app.catalog_entity(self.provisioned))
            .collect()
    }

    fn unchanged_until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.apps
            .iter()
            .map(|app| app.next_change(now, &[], &[]))
            .min()
    }
}

/// The pods of the TaskRuns among `objects`, on their clusters.
fn pods_of(objects: &[(String, Value)]) -> Vec<(String, Value)> {
    objects
        .iter()
        .filter(|(_, o)| o["kind"] == "TaskRun")
        .map(|(cluster, task_run)| (cluster.clone(), objects::task_pod(task_run)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_changes_before_the_next_change() {
        // Every role, at moments all through a day: the objects and PRs at any second
        // before `next_change` are those at the start, and at `next_change` something moved
        // (a change missed would leave the simulated world stale).
        let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
        let fleet = SteadyFleet::sized(3, start, 50);
        let said = |app: &SteadyApp, t| (app.objects(t, start, &[], &[]), app.pull_requests(t));
        // The demo's busy app (pull-request runs every ten minutes) over an hour.
        let demo = SteadyFleet::new(1, start);
        let busy = demo.apps.iter().filter(|a| a.busy).map(|a| (a, 1));
        for (app, hours) in fleet
            .apps
            .iter()
            .filter(|a| a.role != Role::Steady || a.name.ends_with('0'))
            .map(|a| (a, 26))
            .chain(busy)
        {
            let mut now = start;
            while now < start + Duration::hours(hours) {
                let next = app.next_change(now, &[], &[]);
                assert!(
                    next > now,
                    "{}: next change {next} is not after {now}",
                    app.name
                );
                let before = said(app, now);
                for probe in [
                    1,
                    (next - now).num_seconds() / 2,
                    (next - now).num_seconds() - 1,
                ] {
                    let t = now + Duration::seconds(probe);
                    if t < next {
                        assert!(
                            said(app, t) == before,
                            "{} changed at {t}, before {next}",
                            app.name
                        );
                    }
                }
                assert!(
                    said(app, next) != before,
                    "{}: nothing changed at {next}",
                    app.name
                );
                now = next;
            }
        }
    }

    #[test]
    fn the_busy_app_keeps_its_newest_pull_request_runs_each_told_fully() {
        let start: DateTime<Utc> = "2026-11-30T08:03:00Z".parse().unwrap();
        let fleet = SteadyFleet::new(1, start);
        let busy = fleet.apps.iter().find(|a| a.busy).expect("a busy app");
        let objects = busy.objects(start, start - Duration::days(40), &[], &[]);
        let runs: Vec<&Value> = objects
            .iter()
            .map(|(_, o)| o)
            .filter(|o| {
                o["kind"] == "PipelineRun"
                    && o["metadata"]["labels"]["tekton.dev/pipeline"] == "pull-request"
            })
            .collect();
        assert_eq!(runs.len(), PR_RUNS_KEPT as usize);
        let reason = |r: &&Value| {
            r["status"]["conditions"][0]["reason"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        for word in ["Succeeded", "Failed", "Cancelled", "Running"] {
            assert!(runs.iter().any(|r| reason(r) == word), "no {word} run");
        }
        // Every task a run reached has its TaskRun.
        for run in &runs {
            let name = run["metadata"]["name"].as_str().unwrap();
            for child in run["status"]["childReferences"].as_array().unwrap() {
                let task = child["name"].as_str().unwrap();
                assert!(
                    objects
                        .iter()
                        .any(|(_, o)| o["kind"] == "TaskRun" && o["metadata"]["name"] == task),
                    "{name}: no TaskRun {task}"
                );
            }
            assert!(
                run["metadata"]["labels"]["pipelinesascode.tekton.dev/pull-request"].is_string()
            );
        }
        // The newest 18 runs' TaskRuns have their pods (a unit-tests one logs as a test
        // runner); older runs' pods are gone.
        let pod_of = |task_run: &str| {
            objects
                .iter()
                .find(|(_, o)| {
                    o["kind"] == "Pod" && o["metadata"]["name"] == format!("{task_run}-pod")
                })
                .map(|(_, pod)| pod)
        };
        let mut newest_first = runs.clone();
        newest_first.sort_by_key(|r| {
            std::cmp::Reverse(r["status"]["startTime"].as_str().unwrap().to_owned())
        });
        for (k, run) in newest_first.iter().enumerate() {
            for child in run["status"]["childReferences"].as_array().unwrap() {
                let task_run = child["name"].as_str().unwrap();
                let pod = pod_of(task_run);
                assert_eq!(
                    pod.is_some(),
                    k < PR_PODS_KEPT as usize,
                    "{task_run} (run {k})"
                );
                if let Some(pod) = pod.filter(|_| task_run.ends_with("-unit-tests")) {
                    assert_eq!(pod["metadata"]["annotations"]["hangar-sim.io/log"], "tests");
                }
            }
        }
    }

    #[test]
    fn provisioned_apps_do_not_change_as_the_clock_moves() {
        // A timestamp that moved with the clock would turn every tick of the demo into a
        // watch event for every app.
        let start: DateTime<Utc> = "2026-11-30T08:00:00Z".parse().unwrap();
        let fleet = SteadyFleet::new(1, start);
        let xrs = |t: DateTime<Utc>| -> Vec<Value> {
            fleet
                .objects_at(t)
                .into_iter()
                .map(|(_, o)| o)
                .filter(|o| o["apiVersion"] == "catalog.hangar.io/v1alpha1")
                .collect()
        };
        let later = start + Duration::hours(5);
        assert_eq!(xrs(start).len(), fleet.apps.len());
        assert_eq!(xrs(start), xrs(later));
        assert_eq!(fleet.catalog_at(start), fleet.catalog_at(later));
    }
}
