//! Supply-chain evidence for a deployed image: the build that produced it (matched by image
//! digest, else by `repository:tag`) and what Tekton Chains recorded on that build — signed
//! or not, the provenance statement (builder, materials, source commit), the signature, the
//! transparency log entry — and the SBOM the build published (data-shapes §2.3, §10.5).
//!
//! Only builds in the service's own CI/CD namespace count: a run in another tenant's
//! namespace cannot vouch for this service's image. Missing evidence is said plainly.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hangar::{self, NamespaceRole};
use crate::kube::{array_at, at, str_at, time, Object};
use crate::links;
use crate::snapshot::Snapshot;
use crate::tekton::{named_string, RunStatus};

/// Chains' annotation prefix.
pub const CHAINS: &str = "chains.tekton.dev/";
/// Where a person reads an entry of the public Rekor log.
pub const REKOR_SEARCH: &str = "https://search.sigstore.dev/";
/// The public Rekor instance (Chains' default `transparency.url`).
pub const PUBLIC_REKOR: &str = "rekor.sigstore.dev";

/// What vouches for one deployed image.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// The image as deployed.
    pub image: String,
    /// The build whose results name this image; `None` when Tower found none.
    pub build: Option<Build>,
    /// The image's digest: as deployed, else as the build published it.
    pub digest: Option<String>,
    pub signing: Signing,
    /// Chains' provenance statement, when the build carries one Tower can read.
    pub provenance: Option<Provenance>,
    /// The key Chains stored the signature under (`taskrun-<uid>`), when there is one.
    pub signature: Option<String>,
    pub transparency: Option<Transparency>,
    pub sbom: Option<Sbom>,
    /// All of it in plain words, missing pieces named.
    pub summary: String,
}

/// The Tekton run that built the image.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Build {
    /// `TaskRun` or `PipelineRun`.
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    /// The PipelineRun a TaskRun belongs to.
    pub pipeline_run: Option<String>,
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Tekton Chains' verdict on a build (`chains.tekton.dev/signed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Signing {
    /// `"true"`: signed.
    Signed,
    /// `"failed"`: Chains gave up.
    Failed,
    /// No verdict on the build: not signed (yet).
    Unsigned,
    /// No build found: nothing to say.
    Unknown,
}

/// What the provenance statement says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    pub predicate_type: Option<String>,
    pub builder: Option<String>,
    pub build_type: Option<String>,
    /// The Git source among the materials.
    pub source: Option<Source>,
    pub materials: Vec<Material>,
    /// Whether a subject of the statement has the image's digest (`None`: no digest to
    /// compare).
    pub subject_matches: Option<bool>,
}

/// The source a build read: a repository and the commit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// The repository (`https://github.com/o/r`), without `git+` and the ref.
    pub repository: String,
    pub commit: Option<String>,
    /// The commit on GitHub, when the repository is there.
    pub url: Option<String>,
}

/// One material (v0.2) or resolved dependency (v1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Material {
    pub uri: String,
    /// `algorithm:hex`, the first the statement gives.
    pub digest: Option<String>,
}

/// The transparency log entry Chains recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transparency {
    /// `logIndex` from the entry's address.
    pub log_index: Option<u64>,
    /// Where a person reads it (public Rekor only).
    pub url: Option<String>,
}

/// The SBOM the build published (a `*SBOM_URL` result, with `*SBOM_DIGEST`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sbom {
    pub uri: String,
    pub digest: Option<String>,
}

/// An image reference split: `repository[:tag][@digest]`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ImageRef<'a> {
    repository: &'a str,
    tag: Option<&'a str>,
    digest: Option<&'a str>,
}

fn image_ref(image: &str) -> ImageRef<'_> {
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    // A colon after the last slash separates the tag (a registry's port comes before it).
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (repository, tag) = match rest[slash..].rfind(':') {
        Some(i) => (&rest[..slash + i], Some(&rest[slash + i + 1..])),
        None => (rest, None),
    };
    ImageRef {
        repository,
        tag: tag.filter(|t| !t.is_empty()),
        digest: digest.filter(|d| !d.is_empty()),
    }
}

/// A run that built images, with the images its results name.
#[derive(Debug)]
struct Built<'a> {
    run: &'a Object,
    /// `(url, digest)` pairs from `*IMAGE_URL`/`*IMAGE_DIGEST` and `IMAGES`.
    images: Vec<(&'a str, Option<&'a str>)>,
}

/// The builds of one service, read once per derivation.
#[derive(Debug)]
pub struct Builds<'a> {
    built: Vec<Built<'a>>,
    /// PipelineRuns of the service by name, for a TaskRun whose signing happened there.
    pipeline_runs: Vec<&'a Object>,
    github_host: Option<&'a str>,
}

impl<'a> Builds<'a> {
    /// Every TaskRun and PipelineRun in `service`'s CI/CD namespace on the control plane
    /// whose results name an image.
    pub fn of(snapshot: &'a Snapshot, service: &str) -> Self {
        let own = |o: &&'a std::sync::Arc<Object>| {
            o.group() == "tekton.dev"
                && matches!(o.kind.as_str(), "TaskRun" | "PipelineRun")
                && o.namespace().and_then(hangar::namespace_owner)
                    == Some((service, NamespaceRole::Cicd))
        };
        let runs: Vec<&'a Object> = snapshot
            .control_plane()
            .iter()
            .filter(own)
            .map(|o| &**o)
            .collect();
        Self {
            built: runs
                .iter()
                .filter_map(|run| {
                    let images = built_images(run);
                    (!images.is_empty()).then_some(Built { run, images })
                })
                .collect(),
            pipeline_runs: runs
                .into_iter()
                .filter(|o| o.kind == "PipelineRun")
                .collect(),
            github_host: snapshot.github_host.as_deref(),
        }
    }

    /// The evidence for `image` as deployed.
    pub fn evidence(&self, image: &str) -> Evidence {
        let wanted = image_ref(image);
        // Every build of the image; a succeeded one, the latest finished, then by name.
        let found = self
            .built
            .iter()
            .filter_map(|b| {
                b.images
                    .iter()
                    .find(|(url, digest)| same_image(&wanted, url, *digest))
                    .map(|(_, digest)| (b.run, *digest))
            })
            .max_by(|(a, _), (b, _)| {
                let key = |o: &Object| {
                    (
                        crate::tekton::run_status(o) == RunStatus::Succeeded,
                        at(&o.status, &["completionTime"]).and_then(time),
                    )
                };
                key(a).cmp(&key(b)).then_with(|| b.name().cmp(a.name()))
            });
        let Some((run, built_digest)) = found else {
            return Evidence {
                image: image.to_owned(),
                build: None,
                digest: wanted.digest.map(str::to_owned),
                signing: Signing::Unknown,
                provenance: None,
                signature: None,
                transparency: None,
                sbom: None,
                summary: "Tower found no build of this image in the service's CI/CD namespace, so there is no evidence to show.".to_owned(),
            };
        };
        let digest = wanted.digest.or(built_digest).map(str::to_owned);
        // Chains signs the TaskRun, or the PipelineRun it belongs to.
        let parent = run.label("tekton.dev/pipelineRun").and_then(|name| {
            self.pipeline_runs
                .iter()
                .copied()
                .find(|p| p.name() == name && p.namespace() == run.namespace())
        });
        let signer = std::iter::once(run)
            .chain(parent)
            .find(|o| o.annotation(&format!("{CHAINS}signed")).is_some())
            .unwrap_or(run);
        let key = signer.metadata.uid.as_deref().map(|uid| {
            format!(
                "{}-{uid}",
                if signer.kind == "PipelineRun" {
                    "pipelinerun"
                } else {
                    "taskrun"
                }
            )
        });
        let keyed = |what: &str| {
            key.as_deref()
                .and_then(|k| signer.annotation(&format!("{CHAINS}{what}-{k}")))
        };
        let signing = match signer.annotation(&format!("{CHAINS}signed")) {
            Some("true") => Signing::Signed,
            Some("failed") => Signing::Failed,
            _ => Signing::Unsigned,
        };
        let provenance = keyed("payload")
            .and_then(statement)
            .map(|s| provenance(&s, digest.as_deref(), self.github_host));
        let signature = keyed("signature").and(key.clone());
        let transparency = signer
            .annotation(&format!("{CHAINS}transparency"))
            .map(transparency);
        let sbom = sbom(run);
        let build = Build {
            kind: run.kind.clone(),
            name: run.name().to_owned(),
            namespace: run.namespace().map(str::to_owned),
            pipeline_run: run.label("tekton.dev/pipelineRun").map(str::to_owned),
            finished_at: at(&run.status, &["completionTime"]).and_then(time),
        };
        let mut evidence = Evidence {
            image: image.to_owned(),
            build: Some(build),
            digest,
            signing,
            provenance,
            signature,
            transparency,
            sbom,
            summary: String::new(),
        };
        evidence.summary = summary(&evidence);
        evidence
    }
}

/// Whether a build's `(url, digest)` is the deployed image: the same digest, or (when the
/// deployment names no digest) the same repository and tag.
fn same_image(wanted: &ImageRef<'_>, url: &str, digest: Option<&str>) -> bool {
    let built = image_ref(url);
    if built.repository != wanted.repository {
        return false;
    }
    match (wanted.digest, digest.or(built.digest)) {
        (Some(w), Some(b)) => w == b,
        (Some(_), None) => false,
        (None, _) => wanted.tag.is_some() && wanted.tag == built.tag,
    }
}

/// The images a run's results name: `*IMAGE_URL` with the `*IMAGE_DIGEST` of the same
/// prefix, and `IMAGES` (`url@digest` per line or comma) — Chains' type hints.
pub(crate) fn built_images(run: &Object) -> Vec<(&str, Option<&str>)> {
    let results = array_at(&run.status, &["results"]);
    let named = |name: &str| named_string(results, name).map(str::trim);
    let mut out = Vec::new();
    for result in results {
        let Some(name) = str_at(result, &["name"]) else {
            continue;
        };
        if let Some(prefix) = name.strip_suffix("IMAGE_URL") {
            if let Some(url) = str_at(result, &["value"]).map(str::trim) {
                out.push((url, named(&format!("{prefix}IMAGE_DIGEST"))));
            }
        } else if name == "IMAGES" {
            for item in str_at(result, &["value"])
                .unwrap_or_default()
                .split([',', '\n'])
                .map(str::trim)
                .filter(|s| !s.is_empty())
            {
                let digest = image_ref(item).digest;
                out.push((item, digest));
            }
        }
    }
    out
}

/// The in-toto statement in a Chains payload: base64 JSON, the statement itself or a DSSE
/// envelope around it.
fn statement(payload: &str) -> Option<Value> {
    let decode = |text: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
    };
    let value = decode(payload)?;
    match value.get("payload").and_then(Value::as_str) {
        Some(inner) => decode(inner),
        None => Some(value),
    }
}

/// Provenance v0.2 (`predicate.builder`, `materials`) or v1 (`runDetails.builder`,
/// `buildDefinition.resolvedDependencies`).
fn provenance(statement: &Value, digest: Option<&str>, github_host: Option<&str>) -> Provenance {
    let predicate = statement.get("predicate").unwrap_or(&Value::Null);
    let text = |v: &Value, path: &[&str]| str_at(v, path).map(str::to_owned);
    let builder = text(predicate, &["runDetails", "builder", "id"])
        .or_else(|| text(predicate, &["builder", "id"]));
    let build_type = text(predicate, &["buildDefinition", "buildType"])
        .or_else(|| text(predicate, &["buildType"]));
    let listed = {
        let v1 = array_at(predicate, &["buildDefinition", "resolvedDependencies"]);
        if v1.is_empty() {
            array_at(predicate, &["materials"])
        } else {
            v1
        }
    };
    let materials: Vec<Material> = listed
        .iter()
        .filter_map(|m| {
            let uri = str_at(m, &["uri"])?.to_owned();
            let digest = m.get("digest").and_then(Value::as_object).and_then(|d| {
                d.iter()
                    .find_map(|(alg, v)| Some(format!("{alg}:{}", v.as_str()?)))
            });
            Some(Material { uri, digest })
        })
        .collect();
    let source = materials
        .iter()
        .find(|m| m.uri.starts_with("git+"))
        .map(|m| git_source(m, github_host));
    let subject_matches = digest.map(|digest| {
        array_at(statement, &["subject"]).iter().any(|s| {
            s.get("digest").and_then(Value::as_object).is_some_and(|d| {
                d.iter().any(|(alg, v)| {
                    v.as_str()
                        .is_some_and(|hex| digest == format!("{alg}:{hex}"))
                })
            })
        })
    });
    Provenance {
        predicate_type: text(statement, &["predicateType"]),
        builder,
        build_type,
        source,
        materials,
        subject_matches,
    }
}

/// `git+https://github.com/o/r@refs/heads/main` with `sha1:…` → the repository and commit.
fn git_source(material: &Material, github_host: Option<&str>) -> Source {
    let uri = material.uri.trim_start_matches("git+");
    let repository = uri
        .rsplit_once('@')
        .filter(|(_, rest)| !rest.contains('/') || rest.starts_with("refs/"))
        .map_or(uri, |(repo, _)| repo)
        .trim_end_matches(".git")
        .to_owned();
    let commit = material
        .digest
        .as_deref()
        .and_then(|d| {
            d.strip_prefix("sha1:")
                .or_else(|| d.strip_prefix("gitCommit:"))
        })
        .filter(|hex| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_owned);
    let url = commit
        .as_deref()
        .and_then(|c| links::github_commit(&repository, c, github_host))
        .map(links::Checked::into_string);
    Source {
        repository,
        commit,
        url,
    }
}

/// `<rekor>/api/v1/log/entries?logIndex=N` → the index, linked when the log is the public one.
fn transparency(address: &str) -> Transparency {
    let log_index = address
        .split_once('?')
        .and_then(|(_, query)| {
            query
                .split('&')
                .find_map(|pair| pair.strip_prefix("logIndex="))
        })
        .and_then(|n| n.parse::<u64>().ok());
    let public = links::https_on(address, |host| host == PUBLIC_REKOR).is_some();
    Transparency {
        log_index,
        url: log_index
            .filter(|_| public)
            .map(|n| format!("{REKOR_SEARCH}?logIndex={n}")),
    }
}

/// A `*SBOM_URL` result (with `*SBOM_DIGEST` of the same prefix).
fn sbom(run: &Object) -> Option<Sbom> {
    let results = array_at(&run.status, &["results"]);
    let value = |name: &str| {
        named_string(results, name)
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    results.iter().find_map(|r| {
        let name = str_at(r, &["name"])?;
        let prefix = name.strip_suffix("SBOM_URL")?;
        Some(Sbom {
            uri: value(name)?.to_owned(),
            digest: value(&format!("{prefix}SBOM_DIGEST")).map(str::to_owned),
        })
    })
}

fn summary(e: &Evidence) -> String {
    let build = e.build.as_ref().map_or("the build", |b| b.name.as_str());
    let mut parts = vec![match e.signing {
        Signing::Signed => format!("Signed by Tekton Chains ({build})"),
        Signing::Failed => format!("Not signed: Tekton Chains failed to sign {build}"),
        Signing::Unsigned | Signing::Unknown => {
            format!("Not signed: Tekton Chains has not signed {build}")
        }
    }];
    parts.push(match &e.provenance {
        Some(p) => match p.source.as_ref().and_then(|s| s.commit.as_deref()) {
            Some(commit) => format!("provenance names commit {}", &commit[..commit.len().min(7)]),
            None => "provenance names no source commit".to_owned(),
        },
        None => "no provenance recorded".to_owned(),
    });
    if e.provenance.as_ref().and_then(|p| p.subject_matches) == Some(false) {
        parts.push("the provenance is about another digest".to_owned());
    }
    parts.push(match &e.transparency {
        Some(Transparency {
            log_index: Some(n), ..
        }) => format!("transparency log entry {n}"),
        Some(_) => "a transparency log entry Tower cannot read".to_owned(),
        None => "no transparency log entry".to_owned(),
    });
    parts.push(if e.sbom.is_some() {
        "SBOM published".to_owned()
    } else {
        "no SBOM published".to_owned()
    });
    format!("{}.", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_split_at_tag_and_digest() {
        assert_eq!(
            image_ref("registry:5000/acme/shop:1.4.2@sha256:ab"),
            ImageRef {
                repository: "registry:5000/acme/shop",
                tag: Some("1.4.2"),
                digest: Some("sha256:ab")
            }
        );
        assert_eq!(image_ref("registry:5000/acme/shop").tag, None);
        assert_eq!(image_ref("shop:1").repository, "shop");
    }

    #[test]
    fn a_digest_decides_before_a_tag() {
        let wanted = image_ref("ghcr.io/acme/shop:1.4.2@sha256:aa");
        assert!(same_image(
            &wanted,
            "ghcr.io/acme/shop:other",
            Some("sha256:aa")
        ));
        assert!(!same_image(
            &wanted,
            "ghcr.io/acme/shop:1.4.2",
            Some("sha256:bb")
        ));
        assert!(!same_image(&wanted, "ghcr.io/acme/shop:1.4.2", None));
        let tagged = image_ref("ghcr.io/acme/shop:1.4.2");
        assert!(same_image(
            &tagged,
            "ghcr.io/acme/shop:1.4.2",
            Some("sha256:bb")
        ));
        assert!(!same_image(&tagged, "ghcr.io/acme/shop", Some("sha256:bb")));
        assert!(!same_image(&tagged, "ghcr.io/evil/shop:1.4.2", None));
    }

    #[test]
    fn transparency_links_only_the_public_log() {
        let public =
            transparency("https://rekor.sigstore.dev/api/v1/log/entries?logIndex=123456789");
        assert_eq!(public.log_index, Some(123_456_789));
        assert_eq!(
            public.url.as_deref(),
            Some("https://search.sigstore.dev/?logIndex=123456789")
        );
        let private = transparency("https://rekor.internal/api/v1/log/entries?logIndex=7");
        assert_eq!((private.log_index, private.url), (Some(7), None));
        assert_eq!(transparency("garbage").log_index, None);
    }

    #[test]
    fn git_materials_give_the_source_commit() {
        let m = Material {
            uri: "git+https://github.com/acme/shop.git@refs/heads/main".to_owned(),
            digest: Some("sha1:4f2c9e1d".to_owned()),
        };
        let s = git_source(&m, None);
        assert_eq!(s.repository, "https://github.com/acme/shop");
        assert_eq!(s.commit.as_deref(), Some("4f2c9e1d"));
        assert_eq!(
            s.url.as_deref(),
            Some("https://github.com/acme/shop/commit/4f2c9e1d")
        );
        let elsewhere = Material {
            uri: "git+https://evil.example/acme/shop".to_owned(),
            digest: Some("sha1:4f2c".to_owned()),
        };
        assert_eq!(git_source(&elsewhere, None).url, None);
    }
}
