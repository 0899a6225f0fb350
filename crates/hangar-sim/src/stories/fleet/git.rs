//! What Git holds of a steady app: its releases (a build on `main` on its cadence), their
//! commits, tags and images, where each runs when, the environment files and `cicd.yaml`,
//! and the promotions someone made in Git.

use super::*;

impl SteadyApp {
    /// The release whose build started most recently before `now`, minus `behind` seconds.
    pub(super) fn release_before(&self, now: DateTime<Utc>, behind: i64) -> Release {
        let t = now.timestamp() - behind + self.offset;
        let n = t.div_euclid(self.cadence);
        let at = DateTime::from_timestamp(n * self.cadence - self.offset, 0).unwrap_or(now);
        Release { n, at }
    }

    pub(super) fn commit(&self, release: Release) -> String {
        let key = format!("{}/{}", self.name, release.n);
        let more = crate::store::uid_of(&format!("{key}/commit"));
        format!(
            "{}{}",
            crate::store::uid_of(&key).replace('-', ""),
            &more[..8]
        )
    }

    pub(super) fn tag(&self, release: Release) -> String {
        format!("1.{}.0-{}", release.n % 1_000, &self.commit(release)[..7])
    }

    pub(super) fn image(&self, release: Release) -> String {
        format!("ghcr.io/acme/{}:{}", self.name, self.tag(release))
    }

    /// The image's digest (`sha256:` and 64 hex).
    pub(super) fn digest(&self, release: Release) -> String {
        let key = format!("{}/{}/image", self.name, release.n);
        let (a, b) = (
            crate::store::uid_of(&key),
            crate::store::uid_of(&format!("{key}/2")),
        );
        format!("sha256:{}{}", a.replace('-', ""), b.replace('-', ""))
    }

    /// How long after its build starts a release reaches `env` (Argo CD syncs it then).
    pub(super) fn reaches(env: &str) -> i64 {
        match env {
            "dev" => BUILD_TAKES,
            "staging" => BUILD_TAKES + TO_STAGING,
            _ => BUILD_TAKES + TO_PROD,
        }
    }

    /// The release running in `env` at `now` by the app's own cadence (a held app's
    /// staging and prod stop at [`SteadyApp::held`]).
    pub(super) fn running_in(&self, env: &str, now: DateTime<Utc>) -> Release {
        let now = match self.held {
            Some(held) if env != "dev" => now.min(held),
            _ => now,
        };
        self.release_before(now, Self::reaches(env))
    }

    /// What runs in `env` at `now`: the release its cadence brought, unless Git put
    /// another there since ([`Promoted`]: the newest promotion to `env` wins over an
    /// older arrival, and over a later one of no newer release).
    pub(super) fn arrival(&self, env: &str, now: DateTime<Utc>, promoted: &[Promoted]) -> Arrival {
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
    pub(super) fn walk(
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
    pub(super) fn release_of(&self, image: &str, now: DateTime<Utc>) -> Option<Release> {
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
    pub(super) fn source_commit(&self, release: Release) -> crate::stories::RepoCommit {
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
        crate::stories::RepoCommit {
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
    ) -> Option<(
        Vec<crate::stories::RepoCommit>,
        Vec<crate::stories::RepoCommit>,
    )> {
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
    pub(super) fn env_file(&self, env: &str, release: Release) -> String {
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
    pub(super) fn cicd_file(&self) -> String {
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
    pub(super) fn prod_at(release: Release) -> DateTime<Utc> {
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

    /// Its GitOps repo's environment files (the demo's apps; the scale fleet has none).
    pub(super) fn files(
        &self,
        now: DateTime<Utc>,
        promoted: &[Promoted],
    ) -> Vec<crate::stories::RepoFile> {
        if !self.detailed {
            return Vec::new();
        }
        let mut files: Vec<crate::stories::RepoFile> = self
            .environments
            .iter()
            .map(|&(env, _)| crate::stories::RepoFile {
                repo: format!("acme/gitops-{}", self.name),
                path: format!("glidepath/envs/{env}.yaml"),
                content: self.env_file(env, self.arrival(env, now, promoted).release),
            })
            .collect();
        files.push(crate::stories::RepoFile {
            repo: format!("acme/gitops-{}", self.name),
            path: "glidepath/cicd.yaml".to_owned(),
            content: self.cicd_file(),
        });
        files
    }
}
