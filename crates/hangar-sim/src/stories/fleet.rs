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

    /// The release whose build started most recently before `now`, minus `behind` seconds.
    fn release_before(&self, now: DateTime<Utc>, behind: i64) -> Release {
        let t = now.timestamp() - behind + self.offset;
        let n = t.div_euclid(self.cadence);
        let at = DateTime::from_timestamp(n * self.cadence - self.offset, 0).unwrap_or(now);
        Release { n, at }
    }

    fn commit(&self, release: Release) -> String {
        let key = format!("{}/{}", self.name, release.n);
        let more = crate::store::uid_of(&format!("{key}/commit"));
        format!(
            "{}{}",
            crate::store::uid_of(&key).replace('-', ""),
            &more[..8]
        )
    }

    fn tag(&self, release: Release) -> String {
        format!("1.{}.0-{}", release.n % 1_000, &self.commit(release)[..7])
    }

    fn image(&self, release: Release) -> String {
        format!("ghcr.io/acme/{}:{}", self.name, self.tag(release))
    }

    /// The image's digest (`sha256:` and 64 hex).
    fn digest(&self, release: Release) -> String {
        let key = format!("{}/{}/image", self.name, release.n);
        let (a, b) = (
            crate::store::uid_of(&key),
            crate::store::uid_of(&format!("{key}/2")),
        );
        format!("sha256:{}{}", a.replace('-', ""), b.replace('-', ""))
    }

    /// How long after its build starts a release reaches `env` (Argo CD syncs it then).
    fn reaches(env: &str) -> i64 {
        match env {
            "dev" => BUILD_TAKES,
            "staging" => BUILD_TAKES + TO_STAGING,
            _ => BUILD_TAKES + TO_PROD,
        }
    }

    /// The release running in `env` at `now` by the app's own cadence (a held app's
    /// staging and prod stop at [`SteadyApp::held`]).
    fn running_in(&self, env: &str, now: DateTime<Utc>) -> Release {
        let now = match self.held {
            Some(held) if env != "dev" => now.min(held),
            _ => now,
        };
        self.release_before(now, Self::reaches(env))
    }

    /// What runs in `env` at `now`: the release its cadence brought, unless Git put
    /// another there since ([`Promoted`]: the newest promotion to `env` wins over an
    /// older arrival, and over a later one of no newer release).
    fn arrival(&self, env: &str, now: DateTime<Utc>, promoted: &[Promoted]) -> Arrival {
        let timed = self.running_in(env, now);
        let timed_at = timed.at + Duration::seconds(Self::reaches(env));
        let latest = promoted.iter().rposition(|p| p.env == env && p.at <= now);
        match latest {
            Some(i) if promoted[i].at > timed_at || promoted[i].release.n >= timed.n => {
                let p = promoted[i];
                let before = self.arrival(env, p.at - Duration::seconds(1), &promoted[..i]);
                Arrival {
                    release: p.release,
                    at: p.at,
                    replaced: Some(before.release),
                }
            }
            _ => Arrival {
                release: timed,
                at: timed_at,
                replaced: None,
            },
        }
    }

    /// Where a canary that came to step `from` at `at` (with `weight` % so far) is at
    /// `now`, as the Rollouts controller walks `steps`: a weight is set at once, a timed
    /// pause waits its time, an untimed one until someone resumes it; past the last step the
    /// canary is the stable version.
    fn walk(
        steps: &[CanaryStep],
        from: usize,
        weight: u32,
        at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Prod {
        let (mut step, mut weight, mut at) = (from, weight, at);
        while let Some(next) = steps.get(step) {
            match *next {
                Weight(w) => weight = w,
                Analyse => {}
                Pause(None) => return Prod::canary(step, weight, at),
                Pause(Some(takes)) => {
                    let ends = at + Duration::seconds(takes);
                    if now < ends {
                        return Prod::canary(step, weight, at);
                    }
                    at = ends;
                }
            }
            step += 1;
        }
        Prod::Promoted {
            completed: Some(at),
        }
    }

    /// The release `image` names, among the app's newest fifty at `now`.
    fn release_of(&self, image: &str, now: DateTime<Utc>) -> Option<Release> {
        let newest = self.release_before(now, 0);
        (0..50)
            .map(|k| Release {
                n: newest.n - k,
                at: newest.at - Duration::seconds(k * self.cadence),
            })
            .find(|r| self.image(*r) == image)
    }

    /// The commit a release's build was made from on `main` (the merge of its change's pull
    /// request): its code, and every fourth one the app's `cicd.yaml` too.
    fn source_commit(&self, release: Release) -> super::RepoCommit {
        let n = release.n % 1_000;
        let people = ["ana", "bo", "chen", "dara"];
        let mut files = vec![(
            format!("src/change_{n}.rs"),
            "added",
            format!("@@ -0,0 +1 @@\n+// change {n}"),
        )];
        if release.n % 4 == 0 {
            files.push((
                ".glidepath/cicd.yaml".to_owned(),
                "modified",
                format!(
                    "@@ -8,2 +8,2 @@\n   timeout:\n-    tests: {}m\n+    tests: {}m",
                    10 + n % 5,
                    10 + (n + 1) % 5
                ),
            ));
        }
        super::RepoCommit {
            sha: self.commit(release),
            message: format!(
                "Change {n} of {} (#{})\n\nMerged from change-{n}.",
                self.name,
                n + 1_000
            ),
            author: people[usize::try_from(n).unwrap_or(0) % people.len()].to_owned(),
            date: release.at,
            files,
        }
    }

    /// The source repo's commits between the builds of `base` and `head` (shas or prefixes),
    /// among the newest fifty releases at `now`: those `head` has that `base` lacks, oldest
    /// first, and the other way round.
    pub fn commits_between(
        &self,
        base: &str,
        head: &str,
        now: DateTime<Utc>,
    ) -> Option<(Vec<super::RepoCommit>, Vec<super::RepoCommit>)> {
        let newest = self.release_before(now, 0);
        let find = |sha: &str| {
            (0..50)
                .map(|k| Release {
                    n: newest.n - k,
                    at: newest.at - Duration::seconds(k * self.cadence),
                })
                .find(|r| sha.len() >= 7 && self.commit(*r).starts_with(sha))
        };
        let (base, head) = (find(base)?, find(head)?);
        let range = |from: Release, to: Release| {
            (from.n + 1..=to.n)
                .map(|n| {
                    self.source_commit(Release {
                        n,
                        at: from.at + Duration::seconds((n - from.n) * self.cadence),
                    })
                })
                .collect::<Vec<_>>()
        };
        Some((range(base, head), range(head, base)))
    }

    /// The environment file Argo CD deploys `env` from, as it reads with `release` there:
    /// the image promotions change, and the values people edit on the Config tab.
    fn env_file(&self, env: &str, release: Release) -> String {
        let replicas = if env == "prod" { 3 } else { 1 };
        format!(
            "# {name} in {env}: Argo CD deploys what this file says.\n\
             # Staging moves by a commit; prod by a reviewed pull request.\n\
             image: {image}\n\
             replicas: {replicas}   # one per zone in prod\n\
             resources:\n  cpu: 500m\n  memory: 512Mi\n\
             env:\n  # JSON is what the log pipeline parses\n  LOG_FORMAT: json\n  \
             HTTP_TIMEOUT_MS: \"2500\"\n",
            name = self.name,
            image = self.image(release)
        )
    }

    /// The app's `cicd.yaml` (`glidepath/cicd.yaml` in its GitOps repo): its environments
    /// as the fleet runs them, its stages and test gates.
    fn cicd_file(&self) -> String {
        let mut out = format!(
            "# How Glidepath builds and deploys {}.\ndeploy:\n  environments:\n",
            self.name
        );
        for (env, cluster) in self.environments {
            if *env == "dev" {
                out.push_str("    - name: dev\n      type: ground\n");
            } else {
                out.push_str(&format!(
                    "    - name: {env}\n      type: flight\n      cluster: {cluster}\n"
                ));
            }
        }
        out.push_str(
            "stages:\n  - build\n  - deploy-to-dev\ntests:\n  coverage: 80   # the team's floor\n  timeoutMinutes: 15\n",
        );
        out
    }

    /// The promotion `content` written to `path` of `repo` on `main` at `at` makes, if it is
    /// one: an environment file of this app naming one of its releases other than the one
    /// running there.
    pub fn promotion(
        &self,
        repo: &str,
        path: &str,
        content: &str,
        at: DateTime<Utc>,
        promoted: &[Promoted],
    ) -> Option<Promoted> {
        if repo != format!("acme/gitops-{}", self.name) {
            return None;
        }
        let env = path
            .strip_prefix("glidepath/envs/")?
            .strip_suffix(".yaml")?;
        let &(env, _) = self.environments.iter().find(|(e, _)| *e == env)?;
        let image = content.lines().find_map(|line| {
            let value = line.strip_prefix("image:")?.trim();
            Some(value.trim_matches(|c| c == '"' || c == '\''))
        })?;
        let release = self.release_of(image, at)?;
        Some(Promoted { env, release, at })
            .filter(|_| self.arrival(env, at, promoted).release != release)
    }

    /// When `release`'s prod rollout starts.
    fn prod_at(release: Release) -> DateTime<Utc> {
        release.at + Duration::seconds(Self::reaches("prod"))
    }

    /// When the prod rollout of the release in prod at `now` started.
    pub fn prod_rollout_started(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        Self::prod_at(self.running_in("prod", now))
    }

    /// The first moment after `after` that a release of this app reaches prod: its prod
    /// rollout starts then and plays out as the app's [`Role`] says.
    pub fn prod_rollout_at(&self, after: DateTime<Utc>) -> DateTime<Utc> {
        self.prod_rollout_started(after) + Duration::seconds(self.cadence)
    }

    /// The image of the release in prod (stable, or the canary being rolled out) at `now`.
    pub fn prod_image(&self, now: DateTime<Utc>) -> String {
        self.image(self.running_in("prod", now))
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

    /// Its GitOps repo's environment files (the demo's apps; the scale fleet has none).
    fn files(&self, now: DateTime<Utc>, promoted: &[Promoted]) -> Vec<super::RepoFile> {
        if !self.detailed {
            return Vec::new();
        }
        let mut files: Vec<super::RepoFile> = self
            .environments
            .iter()
            .map(|&(env, _)| super::RepoFile {
                repo: format!("acme/gitops-{}", self.name),
                path: format!("glidepath/envs/{env}.yaml"),
                content: self.env_file(env, self.arrival(env, now, promoted).release),
            })
            .collect();
        files.push(super::RepoFile {
            repo: format!("acme/gitops-{}", self.name),
            path: "glidepath/cicd.yaml".to_owned(),
            content: self.cicd_file(),
        });
        files
    }

    /// What a rollout playing `role` that started at `started` is doing at `now`, left to
    /// itself.
    fn play(role: Role, started: DateTime<Utc>, now: DateTime<Utc>) -> Prod {
        let e = (now - started).num_seconds();
        match role {
            Role::Steady => Prod::Promoted { completed: None },
            Role::PausedCanary | Role::CompletingCanary => {
                Self::walk(Self::steps(role), 0, 0, started, now)
            }
            Role::AbortedCanary => {
                let fails_at = (STEP_FAILURES - 1) * STEP_MEASURE_EVERY + 1;
                if e < fails_at {
                    Prod::Analysing {
                        since: started,
                        measured: (e / STEP_MEASURE_EVERY + 1).clamp(1, STEP_FAILURES),
                    }
                } else {
                    Prod::Aborted {
                        at: started + Duration::seconds(fails_at),
                        analysis: Some(started),
                    }
                }
            }
            Role::BlueGreen => Prod::Preview { since: started },
        }
    }

    /// What the rollout is doing at `now` with the actions Argo CD ran on it (`acts`,
    /// oldest first), each as the Rollouts controller takes it: `resume` ends the pause
    /// and walks on (a blue-green preview becomes active), `promote-full` makes the new
    /// version stable at once, `abort` puts all traffic back on stable, `retry` starts an
    /// aborted rollout again from its first step. An action that does not apply (a resume
    /// of a rollout not paused) changes nothing.
    fn played(role: Role, started: DateTime<Utc>, now: DateTime<Utc>, acts: &[Acted]) -> Prod {
        let acts = &acts[..acts.iter().take_while(|a| a.at <= now).count()];
        let Some((last, earlier)) = acts.split_last() else {
            return Self::play(role, started, now);
        };
        let before = Self::played(role, started, last.at, earlier);
        match (last.action, before) {
            (RolloutAction::Resume, Prod::Canary(c)) => Self::walk(
                Self::steps(role),
                c.step as usize + 1,
                c.weight,
                last.at,
                now,
            ),
            (RolloutAction::Resume, Prod::Preview { .. })
            | (
                RolloutAction::PromoteFull,
                Prod::Canary(_) | Prod::Analysing { .. } | Prod::Preview { .. },
            ) => Prod::Promoted {
                completed: Some(last.at),
            },
            (
                RolloutAction::Abort,
                Prod::Canary(_) | Prod::Analysing { .. } | Prod::Preview { .. },
            ) => Prod::Aborted {
                at: last.at,
                analysis: None,
            },
            (RolloutAction::Retry, Prod::Aborted { .. }) => Self::play(role, last.at, now),
            _ => Self::played(role, started, now, earlier),
        }
    }

    /// The release in `env` at `now`, when its rollout started (`None`: promoted at once),
    /// the role it plays and what it is doing. A release promoted in Git walks in as a
    /// canary; one its cadence brought plays the app's role in prod; either as Argo CD's
    /// actions on it say.
    fn rollout_in(
        &self,
        env: &str,
        now: DateTime<Utc>,
        promoted: &[Promoted],
        acted: &[Acted],
    ) -> (Arrival, Option<DateTime<Utc>>, Role, Prod) {
        let arrival = self.arrival(env, now, promoted);
        let release = arrival.release;
        let (started, role) = match arrival.replaced {
            Some(_) => (Some(arrival.at), Role::CompletingCanary),
            None if env == "prod" => (Some(Self::prod_at(release)), self.role),
            None => (None, self.role),
        };
        let acts: Vec<Acted> = acted
            .iter()
            .filter(|a| a.env == env && a.release == release.n)
            .copied()
            .collect();
        let prod = started.map_or(Prod::Promoted { completed: None }, |started| {
            Self::played(role, started, now, &acts)
        });
        (arrival, started, role, prod)
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

    /// The newest three builds on `main` (the oldest is what a paused canary's stable
    /// version came from); each publishes its image from `build-image`, which Tekton
    /// Chains signs as the app's [`Chains`] says.
    fn builds(&self, now: DateTime<Utc>) -> Vec<(String, Value)> {
        let namespace = format!("app-{}-cicd", self.name);
        let mut out = vec![("dev".to_owned(), objects::namespace(&namespace))];
        for back in [0, self.cadence, 2 * self.cadence] {
            let release = self.release_before(now, back);
            let elapsed = (now - release.at).num_seconds();
            let per_task = BUILD_TAKES / BUILD_TASKS.len() as i64;
            let finished = usize::try_from(elapsed / per_task)
                .unwrap_or(0)
                .min(BUILD_TASKS.len());
            let done = finished == BUILD_TASKS.len();
            let name = format!("{}-build-{}", self.name, release.n % 100_000);
            let run = RunRef {
                name: &name,
                namespace: &namespace,
                pipeline: "build",
            };
            let mut pipeline_run = objects::pipeline_run(
                run,
                release.at,
                &BUILD_TASKS,
                finished,
                if done {
                    RunState::Succeeded
                } else {
                    RunState::Running
                },
                done.then(|| release.at + Duration::seconds(BUILD_TAKES)),
            );
            if self.detailed {
                self.pac(&mut pipeline_run, &self.commit(release), "push", None);
            }
            out.push(("dev".to_owned(), pipeline_run));
            for (k, task) in BUILD_TASKS.iter().enumerate().take(finished + 1) {
                let started = release.at + Duration::seconds(k as i64 * per_task);
                if *task == "build-image" && k < finished {
                    out.push(("dev".to_owned(), self.image_build(run, release, per_task)));
                } else if self.detailed && started <= now {
                    let ended = k < finished;
                    out.push((
                        "dev".to_owned(),
                        objects::task_run(
                            run,
                            task,
                            started,
                            if ended {
                                RunState::Succeeded
                            } else {
                                RunState::Running
                            },
                            ended.then(|| started + Duration::seconds(per_task)),
                            None,
                        ),
                    ));
                }
            }
        }
        if self.detailed {
            out.extend(pods_of(&out));
        }
        if self.busy {
            out.extend(self.pr_runs(now));
        }
        out
    }

    /// Pipelines-as-Code's keys on a run it started for `sha` on `event`
    /// (`pull_request` with the PR's number and branch, or `push` to `main`).
    fn pac(&self, run: &mut Value, sha: &str, event: &str, pr: Option<(i64, &str)>) {
        const PAC: &str = "pipelinesascode.tekton.dev";
        let labels = &mut run["metadata"]["labels"];
        labels[format!("{PAC}/sha")] = json!(sha);
        labels[format!("{PAC}/event-type")] = json!(event);
        labels[format!("{PAC}/branch")] = json!("main");
        labels[format!("{PAC}/url-org")] = json!("acme");
        labels[format!("{PAC}/url-repository")] = json!(self.name);
        // One of four people, chosen by the commit.
        let who = usize::from(sha.bytes().next().unwrap_or(0)) % 4;
        labels[format!("{PAC}/sender")] = json!(["ana", "bo", "chen", "dara"][who]);
        let mut annotations = json!({
            format!("{PAC}/repo-url"): format!("https://github.com/acme/{}", self.name),
            format!("{PAC}/sha-url"): format!("https://github.com/acme/{}/commit/{sha}", self.name),
        });
        if let Some((number, branch)) = pr {
            labels[format!("{PAC}/pull-request")] = json!(number.to_string());
            annotations[format!("{PAC}/source-branch")] = json!(branch);
            annotations[format!("{PAC}/sha-title")] = json!(format!("Work on {branch}"));
        }
        run["metadata"]["annotations"] = annotations;
    }

    /// A busy app's pull-request runs: one every ten minutes, the newest
    /// [`PR_RUNS_KEPT`]; about one in nine fails its unit tests, one in 23 is cancelled.
    fn pr_runs(&self, now: DateTime<Utc>) -> Vec<(String, Value)> {
        let namespace = format!("app-{}-cicd", self.name);
        let newest = now.timestamp().div_euclid(PR_EVERY);
        let mut out = Vec::new();
        for slot in (newest - PR_RUNS_KEPT + 1)..=newest {
            let Some(started) = DateTime::from_timestamp(slot * PR_EVERY, 0) else {
                continue;
            };
            let name = format!("{}-pr-{}", self.name, slot % 1_000_000);
            let run = RunRef {
                name: &name,
                namespace: &namespace,
                pipeline: "pull-request",
            };
            // Every run ends at its last task, the unit tests: most pass, about one in nine
            // fails them, one in 23 is cancelled half-way through them.
            let last = PR_TASKS.len() - 1;
            let state = if slot % 23 == 7 {
                RunState::Cancelled
            } else if slot % 9 == 4 {
                RunState::Failed
            } else {
                RunState::Succeeded
            };
            let take = |k: usize| started + Duration::seconds(k as i64 * PR_TASK_TAKES);
            let cancel_at = take(last) + Duration::seconds(PR_TASK_TAKES / 2);
            let end = if state == RunState::Cancelled {
                cancel_at
            } else {
                take(last + 1)
            };
            let done = now >= end;
            let finished = if done && state == RunState::Cancelled {
                last
            } else {
                usize::try_from((now - started).num_seconds() / PR_TASK_TAKES)
                    .unwrap_or(0)
                    .min(last + 1)
            };
            let mut pipeline_run = objects::pipeline_run(
                run,
                started,
                &PR_TASKS,
                finished,
                if done { state } else { RunState::Running },
                done.then_some(end),
            );
            let number = pr_number(slot);
            let branch = format!("feature-{number}");
            let sha = self.pr_sha(slot);
            self.pac(
                &mut pipeline_run,
                &sha,
                "pull_request",
                Some((number, &branch)),
            );
            out.push(("dev".to_owned(), pipeline_run));
            let first_task = out.len();
            for (k, task) in PR_TASKS.iter().enumerate().take(finished + 1) {
                let at = take(k);
                if at > now {
                    break;
                }
                let (task_state, ended) = match (done, k == last, state) {
                    (true, true, RunState::Cancelled) => (RunState::Cancelled, Some(cancel_at)),
                    (true, true, RunState::Failed) => (RunState::Failed, Some(take(k + 1))),
                    _ if k < finished => (RunState::Succeeded, Some(take(k + 1))),
                    _ => (RunState::Running, None),
                };
                out.push((
                    "dev".to_owned(),
                    objects::task_run(run, task, at, task_state, ended, None),
                ));
            }
            if slot > newest - PR_PODS_KEPT {
                let pods = pods_of(&out[first_task..]);
                out.extend(pods);
            }
        }
        out
    }

    /// The finished `build-image` TaskRun of `release`: its image in the results Chains
    /// reads, and Chains' annotations.
    fn image_build(&self, run: RunRef<'_>, release: Release, per_task: i64) -> Value {
        let started = release.at + Duration::seconds(2 * per_task);
        let done = started + Duration::seconds(per_task);
        let mut task = objects::task_run(
            run,
            "build-image",
            started,
            RunState::Succeeded,
            Some(done),
            None,
        );
        let uid = crate::store::uid_of(&format!("{}/build-image", run.name));
        task["metadata"]["uid"] = json!(uid);
        let digest = self.digest(release);
        let mut results = vec![
            json!({"name": "IMAGE_URL", "type": "string", "value": self.image(release)}),
            json!({"name": "IMAGE_DIGEST", "type": "string", "value": digest}),
        ];
        match self.chains {
            Chains::Absent => {}
            Chains::Fails => {
                task["metadata"]["annotations"] =
                    json!({"chains.tekton.dev/signed": "failed", "chains.tekton.dev/retries": "3"});
            }
            Chains::Signs => {
                let hex = digest.trim_start_matches("sha256:");
                let statement = json!({"_type": "https://in-toto.io/Statement/v0.1",
                    "predicateType": "https://slsa.dev/provenance/v1",
                    "subject": [{"name": format!("ghcr.io/acme/{}", self.name), "digest": {"sha256": hex}}],
                    "predicate": {"buildDefinition": {"buildType": "https://tekton.dev/chains/v2/slsa",
                            "externalParameters": {"runSpec": {"pipelineRef": {"name": "build"}}},
                            "resolvedDependencies": [
                                {"uri": format!("git+https://github.com/acme/{}.git@refs/heads/main", self.name),
                                 "digest": {"sha1": self.commit(release)}},
                                {"uri": "oci://ghcr.io/acme/tasks/build-image",
                                 "digest": {"sha256": hex.chars().rev().collect::<String>()}}]},
                        "runDetails": {"builder": {"id": "https://tekton.dev/chains/v2"},
                            "metadata": {"invocationId": uid, "startedOn": ts(started), "finishedOn": ts(done)}}}});
                let payload =
                    base64::engine::general_purpose::STANDARD.encode(statement.to_string());
                let signature = base64::engine::general_purpose::STANDARD
                    .encode(format!("sim-signature/{uid}/{hex}"));
                // Rekor's public log grows by about one entry a second.
                let index = 100_000_000 + done.timestamp() % 1_000_000_000;
                task["metadata"]["annotations"] = json!({
                    "chains.tekton.dev/signed": "true",
                    "chains.tekton.dev/transparency":
                        format!("https://rekor.sigstore.dev/api/v1/log/entries?logIndex={index}"),
                    format!("chains.tekton.dev/payload-taskrun-{uid}"): payload,
                    format!("chains.tekton.dev/signature-taskrun-{uid}"): signature});
                results.push(json!({"name": "SBOM_URL", "type": "string",
                    "value": format!("ghcr.io/acme/{}:sha256-{}.sbom", self.name, &hex[..12])}));
                results.push(json!({"name": "SBOM_DIGEST", "type": "string",
                    "value": format!("sha256:{}", hex.chars().rev().collect::<String>())}));
            }
        }
        task["status"]["results"] = json!(results);
        task
    }

    fn rollout_base(&self, namespace: &str, release: Release, role: Role) -> Value {
        let strategy = match role {
            Role::BlueGreen => json!({"blueGreen": {
                "activeService": format!("{}-active", self.name),
                "previewService": format!("{}-preview", self.name),
                "autoPromotionEnabled": false}}),
            Role::AbortedCanary | Role::CompletingCanary => {
                json!({"canary": {"steps": Self::steps_json(role)}})
            }
            Role::Steady | Role::PausedCanary => json!({"canary": {
                "analysis": {"templates": [{"templateName": "error-rate"}], "startingStep": 1},
                "steps": Self::steps_json(role)}}),
        };
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": self.name, "namespace": namespace, "generation": 1,
                         "labels": {"app.kubernetes.io/name": self.name}},
            "spec": {"replicas": 3,
                "selector": {"matchLabels": {"app": self.name}},
                "template": {"metadata": {"labels": {"app": self.name}},
                             "spec": {"containers": [{"name": "app", "image": self.image(release)}]}},
                "strategy": strategy}})
    }

    /// The canary steps of a rollout playing `role` (none for blue-green).
    fn steps(role: Role) -> &'static [CanaryStep] {
        match role {
            Role::BlueGreen => &[],
            Role::CompletingCanary => &WALKING_STEPS,
            Role::AbortedCanary => &ANALYSED_STEPS,
            Role::Steady | Role::PausedCanary => &PAUSING_STEPS,
        }
    }

    fn steps_json(role: Role) -> Value {
        Self::steps(role)
            .iter()
            .map(|step| match *step {
                Weight(w) => json!({"setWeight": w}),
                Pause(None) => json!({"pause": {}}),
                Pause(Some(s)) if s % 60 == 0 => {
                    json!({"pause": {"duration": format!("{}m", s / 60)}})
                }
                Pause(Some(s)) => json!({"pause": {"duration": format!("{s}s")}}),
                Analyse => json!({"analysis": {"templates": [{"templateName": "error-rate"}]}}),
            })
            .collect()
    }

    /// The release before `release`.
    fn previous(&self, release: Release) -> Release {
        Release {
            n: release.n - 1,
            at: release.at - Duration::seconds(self.cadence),
        }
    }

    /// The first release of the [`Trouble::Regressed`] app that is slow: the one in prod
    /// at the fleet's start.
    fn regressed_from(&self, long_ago: DateTime<Utc>) -> Option<i64> {
        (self.trouble == Some(Trouble::Regressed))
            .then(|| self.running_in("prod", fleet_start(long_ago)).n)
    }

    /// Where the app runs in `env` besides its Rollout: a pod per replica of each
    /// ReplicaSet scaled up, the prod autoscaler, and the Events a cluster keeps about them
    /// — the rollout updated, a canary paused or aborted, the regressed release's pod
    /// OOMKilled and backing off, the outage's failed readiness probes.
    fn runtime_objects(
        &self,
        env: &str,
        namespace: &str,
        replica_sets: &[Value],
        (arrival, prod, long_ago): (&Arrival, &Prod, DateTime<Utc>),
        now: DateTime<Utc>,
    ) -> Vec<Value> {
        let name = self.name.as_str();
        let mut out = Vec::new();
        let event = |object: (&str, &str),
                     (kind, reason, message): (&str, &str, String),
                     at: DateTime<Utc>,
                     count: u32| {
            json!({"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": format!("{}.{}", object.1, &crate::store::uid_of(&format!("{namespace}/{reason}/{}", object.1)).replace('-', "")[16..]),
                             "namespace": namespace, "creationTimestamp": ts(at)},
                "involvedObject": {"kind": object.0, "name": object.1, "namespace": namespace},
                "reason": reason, "message": message, "type": kind, "count": count,
                "firstTimestamp": ts(at), "lastTimestamp": ts(at),
                "source": {"component": if object.0 == "Rollout" { "rollouts-controller" } else { "kubelet" }}})
        };
        let slow_from = self.regressed_from(long_ago);
        let oom_at = arrival.at + Duration::seconds(OOM_AFTER);
        for rs in replica_sets {
            let replicas = rs["spec"]["replicas"].as_u64().unwrap_or(0);
            let hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap_or_default();
            let image = &rs["spec"]["template"]["spec"]["containers"][0]["image"];
            let since = rs["metadata"]["creationTimestamp"].clone();
            let revision = revision_of(rs);
            for i in 0..replicas {
                let uid = crate::store::uid_of(&format!("{namespace}/{hash}/{i}"));
                let pod_name = format!("{name}-{hash}-{}", &uid[uid.len() - 5..]);
                let mut status = json!({"name": "app", "ready": true, "restartCount": 0,
                    "image": image, "state": {"running": {"startedAt": since}}});
                let oomed = env == "prod"
                    && i == 0
                    && revision == Some(arrival.release.n)
                    && slow_from.is_some_and(|n| arrival.release.n >= n)
                    && now >= oom_at;
                if oomed {
                    status["restartCount"] = json!(3);
                    status["state"] =
                        json!({"running": {"startedAt": ts(oom_at + Duration::seconds(20))}});
                    status["lastState"] = json!({"terminated": {"reason": "OOMKilled", "exitCode": 137,
                        "startedAt": ts(oom_at - Duration::seconds(600)), "finishedAt": ts(oom_at)}});
                    out.push(event(
                        ("Pod", &pod_name),
                        (
                            "Warning",
                            "BackOff",
                            "Back-off restarting failed container app in pod ".to_owned()
                                + &pod_name,
                        ),
                        oom_at,
                        3,
                    ));
                }
                out.push(json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": pod_name, "namespace": namespace, "creationTimestamp": since,
                        "labels": {"app.kubernetes.io/name": name, "rollouts-pod-template-hash": hash}},
                    "spec": {"containers": [{"name": "app", "image": image}],
                             "nodeName": format!("ip-10-0-{}-{}.ec2.internal", i % 3 + 1, 10 + i * 7)},
                    "status": {"phase": "Running", "startTime": since, "containerStatuses": [status]}}));
            }
        }
        let revision = arrival.release.n;
        out.push(event(
            ("Rollout", name),
            (
                "Normal",
                "RolloutUpdated",
                format!("Rollout updated to revision {revision}"),
            ),
            arrival.at,
            1,
        ));
        match prod {
            Prod::Canary(CanaryAt {
                paused_since: Some(at),
                ..
            }) => out.push(event(
                ("Rollout", name),
                (
                    "Normal",
                    "RolloutPaused",
                    "Rollout is paused (CanaryPauseStep)".to_owned(),
                ),
                *at,
                1,
            )),
            Prod::Aborted { at, .. } => out.push(event(
                ("Rollout", name),
                (
                    "Warning",
                    "RolloutAborted",
                    format!("Rollout aborted update to revision {revision}"),
                ),
                *at,
                1,
            )),
            Prod::Promoted {
                completed: Some(at),
            } => out.push(event(
                ("Rollout", name),
                (
                    "Normal",
                    "RolloutCompleted",
                    format!("Rollout completed update to revision {revision}"),
                ),
                *at,
                1,
            )),
            _ => {}
        }
        if env == "prod" {
            out.push(json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": ts(long_ago)},
                "spec": {"minReplicas": 3, "maxReplicas": 6,
                         "scaleTargetRef": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": name}},
                "status": {"currentReplicas": 3, "desiredReplicas": if slow_from.is_some() { 5 } else { 3 }}}));
            if self.trouble == Some(Trouble::Outage) {
                let (_, ended) = outage(long_ago);
                out.push(event(
                    ("Rollout", name),
                    (
                        "Warning",
                        "Unhealthy",
                        "Readiness probe failed: HTTP probe failed with statuscode: 503".to_owned(),
                    ),
                    ended,
                    24,
                ));
            }
        }
        out
    }

    /// What the app's requests look like in `env` at `at` (the simulated Prometheus'
    /// series): a steady error ratio near 0.04 % and p99 near 230 ms, wobbling over the day;
    /// in prod, the canary's share of its errors at its weight — the paused canary's
    /// AnalysisRun measures 0.2–0.6 %, the aborted one's 7–9 % —, the regressed release's
    /// latency, and the outage.
    pub fn signals(
        &self,
        env: &str,
        at: DateTime<Utc>,
        long_ago: DateTime<Utc>,
        promoted: &[Promoted],
        acted: &[Acted],
    ) -> super::Signals {
        let (arrival, started, role, prod) = self.rollout_in(env, at, promoted, acted);
        #[allow(clippy::cast_precision_loss)]
        let wobble = (at.timestamp() as f64 / 10_800.0 + self.offset as f64).sin();
        let mut error = 0.0004 + 0.0002 * wobble;
        let (mut p95, mut p99) = (0.110 + 0.010 * wobble, 0.230 + 0.020 * wobble);
        if env == "prod" {
            let n = arrival.release.n;
            #[allow(clippy::cast_precision_loss)]
            match prod {
                Prod::Canary(c) if role == Role::PausedCanary => {
                    let i = started.map_or(0, |s| (at - s).num_seconds() / MEASURE_EVERY);
                    let canary = 0.002 + ((n + i) % 5) as f64 * 0.001;
                    let w = f64::from(c.weight) / 100.0;
                    error = w * canary + (1.0 - w) * error;
                }
                Prod::Analysing { since, .. } => {
                    let i = (at - since).num_seconds() / STEP_MEASURE_EVERY;
                    let canary = 0.07 + ((n + i) % 3) as f64 * 0.01;
                    error = 0.2 * canary + 0.8 * error;
                }
                _ => {}
            }
            if self.regressed_from(long_ago).is_some_and(|from| n >= from) {
                (p95, p99) = (0.420 + 0.015 * wobble, 0.910 + 0.030 * wobble);
            }
            if self.trouble == Some(Trouble::Outage) {
                let (began, ended) = outage(long_ago);
                if at >= began && at < ended {
                    error = 0.35;
                }
            }
        }
        super::Signals {
            error_ratio: error,
            latency_p95: p95,
            latency_p99: p99,
        }
    }

    /// The ReplicaSet Argo Rollouts keeps for `release`'s pod template, all `replicas` ready.
    fn replica_set(&self, namespace: &str, release: Release, replicas: u32) -> Value {
        let hash = self.pod_hash(release);
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": format!("{}-{hash}", self.name), "namespace": namespace,
                "labels": {"app": self.name, "rollouts-pod-template-hash": hash},
                "annotations": {"rollout.argoproj.io/revision": release.n.to_string()},
                "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                                     "name": self.name, "controller": true}]},
            "spec": {"replicas": replicas,
                "selector": {"matchLabels": {"app": self.name, "rollouts-pod-template-hash": hash}},
                "template": {"metadata": {"labels": {"app": self.name, "rollouts-pod-template-hash": hash}},
                             "spec": {"containers": [{"name": "app", "image": self.image(release)}]}}},
            "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
                       "observedGeneration": 1}})
    }

    fn pod_hash(&self, release: Release) -> String {
        crate::store::uid_of(&self.tag(release))[..10].replace('-', "")
    }

    fn healthy_rollout(&self, namespace: &str, release: Release, role: Role) -> Value {
        let mut rollout = self.rollout_base(namespace, release, role);
        let hash = self.pod_hash(release);
        rollout["status"] = json!({"phase": "Healthy", "replicas": 3, "updatedReplicas": 3,
            "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": "1",
            "currentPodHash": hash, "stableRS": hash,
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Healthy", true, "RolloutHealthy", release.at, Some("Rollout is healthy")),
                condition("Completed", true, "RolloutCompleted", release.at, Some("Rollout completed update to revision"))]});
        if role == Role::BlueGreen {
            rollout["status"]["blueGreen"] =
                json!({"activeSelector": hash, "previewSelector": hash});
        } else {
            rollout["status"]["currentStepIndex"] = json!(Self::steps(role).len());
            rollout["status"]["canary"] = json!({"weights": {
                "canary": {"weight": 0, "podTemplateHash": hash},
                "stable": {"weight": 100, "podTemplateHash": hash}}});
        }
        rollout
    }

    /// A canary pausing at step `at.step` with `at.weight` % of traffic, the previous
    /// release still stable.
    fn canary_rollout(
        &self,
        namespace: &str,
        (release, stable): (Release, Release),
        at: CanaryAt,
        now: DateTime<Utc>,
        role: Role,
    ) -> Value {
        let mut rollout = self.rollout_base(namespace, release, role);
        let (hash, stable_hash) = (self.pod_hash(release), self.pod_hash(stable));
        let paused_at = at.paused_since.unwrap_or(now);
        let canary = canary_replicas(at.weight);
        rollout["status"] = json!({"phase": "Paused", "message": "CanaryPauseStep",
            "replicas": 3 + canary, "updatedReplicas": canary, "readyReplicas": 3 + canary,
            "availableReplicas": 3 + canary,
            "observedGeneration": "1", "currentPodHash": hash, "stableRS": stable_hash,
            "currentStepIndex": at.step, "controllerPause": true,
            "pauseConditions": [{"reason": "CanaryPauseStep", "startTime": ts(paused_at)}],
            "canary": {
                "weights": {"canary": {"weight": at.weight, "podTemplateHash": hash},
                            "stable": {"weight": 100 - at.weight, "podTemplateHash": stable_hash}}},
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Paused", true, "RolloutPaused", paused_at, Some("Rollout is paused")),
                condition("Healthy", false, "RolloutHealthyFalse", paused_at, Some("Rollout is not healthy"))]});
        if role == Role::PausedCanary {
            rollout["status"]["canary"]["currentBackgroundAnalysisRunStatus"] =
                json!({"name": self.analysis_name(release), "status": "Running"});
        }
        rollout
    }

    /// The aborting canary while its step analysis measures, at 20 %.
    fn analysing_rollout(
        &self,
        namespace: &str,
        (release, stable): (Release, Release),
        since: DateTime<Utc>,
    ) -> Value {
        let mut rollout = self.rollout_base(namespace, release, self.role);
        let (hash, stable_hash) = (self.pod_hash(release), self.pod_hash(stable));
        let canary = canary_replicas(20);
        rollout["status"] = json!({"phase": "Progressing",
            "replicas": 3 + canary, "updatedReplicas": canary, "readyReplicas": 3 + canary,
            "availableReplicas": 3 + canary,
            "observedGeneration": "1", "currentPodHash": hash, "stableRS": stable_hash,
            "currentStepIndex": 1,
            "canary": {
                "weights": {"canary": {"weight": 20, "podTemplateHash": hash},
                            "stable": {"weight": 80, "podTemplateHash": stable_hash}},
                "currentStepAnalysisRunStatus": {"name": self.step_analysis_name(release), "status": "Running"}},
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Progressing", true, "ReplicaSetUpdated", since, Some("ReplicaSet is progressing")),
                condition("Healthy", false, "RolloutHealthyFalse", since, Some("Rollout is not healthy"))]});
        rollout
    }

    /// An aborted rollout — by its failed step analysis (`by_analysis`), or by hand: all
    /// traffic back on stable, the canary scaled to zero.
    fn aborted_rollout(
        &self,
        namespace: &str,
        (release, stable): (Release, Release),
        at: DateTime<Utc>,
        (role, by_analysis): (Role, bool),
    ) -> Value {
        let mut rollout = self.rollout_base(namespace, release, role);
        let (hash, stable_hash) = (self.pod_hash(release), self.pod_hash(stable));
        let why = step_failure(STEP_FAILURES);
        let message = if by_analysis {
            format!(
                "RolloutAborted: Rollout aborted update to revision {}: {why}",
                release.n
            )
        } else {
            format!(
                "RolloutAborted: Rollout aborted update to revision {}",
                release.n
            )
        };
        rollout["status"] = json!({"phase": "Degraded", "message": message, "abort": true,
            "abortedAt": ts(at), "replicas": 3, "updatedReplicas": 0, "readyReplicas": 3,
            "availableReplicas": 3, "observedGeneration": "1", "currentPodHash": hash,
            "stableRS": stable_hash, "currentStepIndex": 0,
            "canary": {
                "weights": {"canary": {"weight": 0, "podTemplateHash": hash},
                            "stable": {"weight": 100, "podTemplateHash": stable_hash}},
                "currentStepAnalysisRunStatus": {"name": self.step_analysis_name(release),
                                                 "status": "Failed", "message": why}},
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Progressing", false, "RolloutAborted", at, Some(&message)),
                condition("Healthy", false, "RolloutHealthyFalse", at, Some("Rollout is not healthy"))]});
        if !by_analysis {
            let status = &mut rollout["status"];
            if let Some(canary) = status["canary"].as_object_mut() {
                canary.remove("currentStepAnalysisRunStatus");
            }
            if role == Role::BlueGreen {
                if let Some(fields) = status.as_object_mut() {
                    fields.remove("canary");
                    fields.remove("currentStepIndex");
                }
                status["blueGreen"] =
                    json!({"activeSelector": stable_hash, "previewSelector": stable_hash});
            }
        }
        rollout
    }

    /// Blue-green: the new version up as the preview, paused for a promotion.
    fn preview_rollout(
        &self,
        namespace: &str,
        (release, stable): (Release, Release),
        since: DateTime<Utc>,
    ) -> Value {
        let mut rollout = self.rollout_base(namespace, release, self.role);
        let (hash, stable_hash) = (self.pod_hash(release), self.pod_hash(stable));
        rollout["status"] = json!({"phase": "Paused", "message": "BlueGreenPause",
            "replicas": 6, "updatedReplicas": 3, "readyReplicas": 6, "availableReplicas": 6,
            "observedGeneration": "1", "currentPodHash": hash, "stableRS": stable_hash,
            "controllerPause": true,
            "pauseConditions": [{"reason": "BlueGreenPause", "startTime": ts(since)}],
            "blueGreen": {"activeSelector": stable_hash, "previewSelector": hash},
            "conditions": [
                condition("Available", true, "AvailableReason", release.at, Some("Rollout has minimum availability")),
                condition("Paused", true, "RolloutPaused", since, Some("Rollout is paused")),
                condition("Healthy", false, "RolloutHealthyFalse", since, Some("Rollout is not healthy"))]});
        rollout
    }

    fn analysis_name(&self, release: Release) -> String {
        format!(
            "{}-{}-{}",
            self.name,
            self.pod_hash(release),
            release.n % 1_000
        )
    }

    /// Argo Rollouts names a step's AnalysisRun after the step's index.
    fn step_analysis_name(&self, release: Release) -> String {
        format!("{}-1", self.analysis_name(release))
    }

    /// The background analysis: one error-rate measurement every 5 minutes since the canary
    /// started, all under the 1 % threshold so far.
    fn analysis_run(
        &self,
        namespace: &str,
        release: Release,
        started: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Value {
        let count = ((now - started).num_seconds() / MEASURE_EVERY + 1).clamp(1, 48);
        let measurements: Vec<Value> = (0..count)
            .map(|i| {
                let at = started + Duration::seconds(i * MEASURE_EVERY);
                // A steady, plausible error rate between 0.20 % and 0.60 %.
                let rate = 0.002 + ((release.n + i) % 5) as f64 * 0.001;
                json!({"phase": "Successful", "value": format!("[{rate:.4}]"),
                       "startedAt": ts(at), "finishedAt": ts(at + Duration::seconds(1))})
            })
            .collect();
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
            "metadata": {"name": self.analysis_name(release), "namespace": namespace,
                "labels": {"rollout-type": "Background", "rollouts-pod-template-hash": self.pod_hash(release)},
                "annotations": {"rollout.argoproj.io/revision": release.n.to_string()},
                "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                                     "name": self.name, "controller": true}]},
            "spec": {"metrics": [self.error_rate_metric("5m", 0.01, 2)]},
            "status": {"phase": "Running", "startedAt": ts(started),
                "runSummary": {"count": 1},
                "metricResults": [{"name": "error-rate", "phase": "Running",
                    "count": count, "successful": count, "measurements": measurements}]}})
    }

    fn error_rate_metric(&self, interval: &str, below: f64, failure_limit: i64) -> Value {
        json!({"name": "error-rate", "interval": interval,
            "successCondition": format!("result[0] < {below}"), "failureLimit": failure_limit,
            "provider": {"prometheus": {"address": "http://prometheus.monitoring:9090",
                "query": format!("sum(rate(http_requests_total{{app=\"{}\",code=~\"5..\"}}[5m])) / sum(rate(http_requests_total{{app=\"{}\"}}[5m]))", self.name, self.name)}}})
    }

    /// The aborting canary's step analysis after `measured` measurements a minute apart,
    /// every one failing (an error rate of 7–9 % against a 5 % limit); `failed_at` once the
    /// run has failed.
    fn step_analysis_run(
        &self,
        namespace: &str,
        release: Release,
        started: DateTime<Utc>,
        measured: i64,
        failed_at: Option<DateTime<Utc>>,
    ) -> Value {
        let measurements: Vec<Value> = (0..measured)
            .map(|i| {
                let at = started + Duration::seconds(i * STEP_MEASURE_EVERY);
                let rate = 0.07 + ((release.n + i) % 3) as f64 * 0.01;
                json!({"phase": "Failed", "value": format!("[{rate:.4}]"),
                       "startedAt": ts(at), "finishedAt": ts(at + Duration::seconds(1))})
            })
            .collect();
        let why = step_failure(measured);
        let phase = if failed_at.is_some() {
            "Failed"
        } else {
            "Running"
        };
        let mut status = json!({"phase": phase, "startedAt": ts(started),
            "runSummary": {"count": 1, "failed": i64::from(failed_at.is_some())},
            "metricResults": [{"name": "error-rate", "phase": phase,
                "count": measured, "failed": measured, "measurements": measurements}]});
        if let Some(at) = failed_at {
            status["message"] = json!(why);
            status["completedAt"] = json!(ts(at));
            status["metricResults"][0]["message"] = json!(why);
        }
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
            "metadata": {"name": self.step_analysis_name(release), "namespace": namespace,
                "labels": {"rollout-type": "Step", "step-index": "1",
                           "rollouts-pod-template-hash": self.pod_hash(release)},
                "annotations": {"rollout.argoproj.io/revision": release.n.to_string()},
                "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                                     "name": self.name, "controller": true}]},
            "spec": {"metrics": [self.error_rate_metric("1m", 0.05, STEP_FAILURES - 1)]},
            "status": status})
    }

    /// Release PRs to prod on the GitOps repo: the newest (open until it is merged three
    /// hours after its build) and the one before it.
    fn pull_requests(&self, now: DateTime<Utc>) -> Vec<PullRequest> {
        [0, self.cadence]
            .into_iter()
            .map(|back| {
                let release = self.release_before(now, back);
                let opened = release.at + Duration::seconds(BUILD_TAKES + TO_STAGING);
                let merged_at = release.at + Duration::seconds(BUILD_TAKES + TO_PROD);
                let merged = (merged_at <= now).then_some(merged_at);
                PullRequest {
                    repo: format!("acme/gitops-{}", self.name),
                    number: u64::try_from(release.n % 10_000).unwrap_or(0) + 1,
                    title: format!("Release {} to prod", self.tag(release)),
                    body: format!("Promotes {} from staging to prod.", self.image(release)),
                    user: "glidepath[bot]".to_owned(),
                    head_ref: format!("release/prod-{}", self.tag(release)),
                    base_ref: "main".to_owned(),
                    created_at: opened,
                    merged_at: merged,
                    closed_at: merged,
                    ..PullRequest::default()
                }
            })
            // A held app's releases go to prod only by the promotions people make.
            .filter(|pr| {
                pr.created_at <= now
                    && self
                        .held
                        .is_none_or(|held| pr.merged_at.is_some_and(|m| m <= held))
            })
            .chain(self.source_pull_requests(now))
            .collect()
    }

    /// A detailed app's source repo: each of the newest three releases was a PR merged as
    /// its build began (its merge commit is the build's commit), opened at the release
    /// before; a busy app also has a PR an hour for its pull-request runs — the current
    /// hour's open, its head the newest run's commit, earlier ones closed unmerged.
    fn source_pull_requests(&self, now: DateTime<Utc>) -> Vec<PullRequest> {
        if !self.detailed {
            return Vec::new();
        }
        let people = ["ana", "bo", "chen", "dara"];
        let repo = format!("acme/{}", self.name);
        let mut out: Vec<PullRequest> = [0, self.cadence, 2 * self.cadence]
            .into_iter()
            .map(|back| {
                let release = self.release_before(now, back);
                let opened = self.release_before(now, back + self.cadence).at;
                let n = release.n % 1_000;
                PullRequest {
                    repo: repo.clone(),
                    number: u64::try_from(n).unwrap_or(0) + 1_000,
                    title: format!("Change {n} of {}", self.name),
                    body: String::new(),
                    user: people[usize::try_from(n).unwrap_or(0) % people.len()].to_owned(),
                    head_ref: format!("change-{n}"),
                    base_ref: "main".to_owned(),
                    created_at: opened,
                    merged_at: Some(release.at),
                    closed_at: Some(release.at),
                    head_sha: Some(self.commit(release).chars().rev().collect::<String>()),
                    merge_commit_sha: Some(self.commit(release)),
                    draft: false,
                    labels: Vec::new(),
                }
            })
            .collect();
        if self.busy {
            let newest = now.timestamp().div_euclid(PR_EVERY);
            let oldest = newest - PR_RUNS_KEPT + 1;
            // A PR an hour (six runs), the runs of its hour pushed to it.
            for hour in oldest.div_euclid(6)..=newest.div_euclid(6) {
                let number = pr_number(hour * 6);
                let last_slot = (hour * 6 + 5).min(newest);
                let closed = (hour < newest.div_euclid(6))
                    .then(|| DateTime::from_timestamp((hour + 1) * 6 * PR_EVERY, 0))
                    .flatten();
                out.push(PullRequest {
                    repo: repo.clone(),
                    number: u64::try_from(number).unwrap_or(0),
                    title: format!("Try feature-{number}"),
                    body: String::new(),
                    user: people[usize::try_from(hour).unwrap_or(0) % people.len()].to_owned(),
                    head_ref: format!("feature-{number}"),
                    base_ref: "main".to_owned(),
                    created_at: DateTime::from_timestamp(hour * 6 * PR_EVERY, 0).unwrap_or(now),
                    merged_at: None,
                    closed_at: closed,
                    head_sha: Some(self.pr_sha(last_slot)),
                    merge_commit_sha: None,
                    draft: false,
                    labels: Vec::new(),
                });
            }
        }
        out
    }

    /// The commit a busy app's pull-request run of `slot` ran.
    fn pr_sha(&self, slot: i64) -> String {
        let sha = crate::store::uid_of(&format!("{}/pr/{slot}", self.name)).replace('-', "");
        format!("{sha}{}", &sha[..8])
    }
}

/// The PR a busy app's pull-request run of `slot` runs for: one an hour, numbered 400–459.
fn pr_number(slot: i64) -> i64 {
    400 + (slot / 6) % 60
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
