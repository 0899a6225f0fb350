//! Invariants of the provisioning derivation under shuffled and corrupted snapshots.

use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::{json, Value};
use tower_shared::provisioning::{derive_provisioning, Provisioning, StepStatus};
use tower_shared::snapshot::Snapshot;

use crate::support::root;

/// The snapshot files in `fixtures/<dir>`, by name.
fn read_fixtures(dir: &str) -> Vec<(String, Value)> {
    let dir = root().join("fixtures").join(dir);
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            (name, value)
        })
        .collect()
}

fn fixtures() -> &'static [Value] {
    static FIXTURES: OnceLock<Vec<Value>> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        read_fixtures("provisioning")
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    })
}

/// Every snapshot fixture, provisioning and cloud deploys alike.
fn every_fixture() -> &'static [(String, Value)] {
    static EVERY: OnceLock<Vec<(String, Value)>> = OnceLock::new();
    EVERY.get_or_init(|| {
        let mut all = read_fixtures("provisioning");
        all.extend(read_fixtures("cloud-deploys"));
        all
    })
}

/// The browser derives one service from `/api/snapshot?service=X`
/// ([`Snapshot::for_service`]); the strip from everything. Both must say the same of X.
fn narrowing_agrees(name: &str, snapshot: &Snapshot) -> Result<usize, String> {
    let full = derive_provisioning(snapshot);
    for service in &full.services {
        let narrowed = derive_provisioning(&snapshot.for_service(&service.name));
        match narrowed.services.as_slice() {
            [only] if only == service => {}
            other => {
                return Err(format!(
                    "{name}: {} derived from its own snapshot differs from the full derivation:\nfull: {service:#?}\nnarrowed: {other:#?}",
                    service.name
                ))
            }
        }
    }
    Ok(full.services.len())
}

/// A small deterministic generator, seeded by proptest.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap()
    }
}

fn shuffle(items: &mut [Value], rng: &mut Rng) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i + 1));
    }
}

/// Every list whose order carries no meaning, shuffled.
pub fn shuffled(snapshot: &Value, seed: u64) -> Value {
    let mut rng = Rng(seed | 1);
    let mut s = snapshot.clone();
    if let Some(clusters) = s.get_mut("clusters").and_then(Value::as_object_mut) {
        for objects in clusters.values_mut() {
            shuffle(objects.as_array_mut().unwrap(), &mut rng);
        }
    }
    for key in ["pullRequests", "catalog", "history"] {
        // `get_mut`, not indexing: indexing would add the key as `null`.
        if let Some(list) = s.get_mut(key).and_then(Value::as_array_mut) {
            shuffle(list, &mut rng);
        }
    }
    s
}

/// Values that break assumptions: wrong types, empty, unparseable or out-of-order times.
fn odd_value(rng: &mut Rng) -> Value {
    let odd = [
        Value::Null,
        json!(0),
        json!(-1),
        json!(""),
        json!("garbage"),
        json!("2026-13-45T99:99:99Z"),
        json!("1970-01-01T00:00:00Z"),
        json!("2999-01-01T00:00:00Z"),
        json!("2026-11-30T07:00:00Z"),
        json!([]),
        json!({}),
        json!(true),
        json!(1e308),
        json!([{"type": "Ready", "status": "True"}]),
        json!("True"),
        json!("False"),
    ];
    odd[rng.below(odd.len())].clone()
}

/// Replaces (or deletes) one node somewhere inside a random object or pull request.
fn corrupt(snapshot: &mut Value, rng: &mut Rng) {
    // Walk down read-only to choose a JSON pointer, then change the snapshot once.
    let mut pointer = if rng.below(3) == 0 {
        "/pullRequests".to_owned()
    } else {
        "/clusters/dev".to_owned()
    };
    let mut parent_is_object = false;
    let mut node = snapshot.pointer(&pointer).cloned().unwrap_or(Value::Null);
    for _ in 0..=rng.below(6) {
        let (step, child) = match &node {
            Value::Array(items) if !items.is_empty() => {
                let i = rng.below(items.len());
                (i.to_string(), items[i].clone())
            }
            Value::Object(map) if !map.is_empty() => {
                let (key, value) = map.iter().nth(rng.below(map.len())).unwrap();
                (key.replace('~', "~0").replace('/', "~1"), value.clone())
            }
            _ => break,
        };
        parent_is_object = node.is_object();
        pointer = format!("{pointer}/{step}");
        node = child;
    }
    if parent_is_object && rng.below(5) == 0 {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let key = key.replace("~1", "/").replace("~0", "~");
        if let Some(map) = snapshot.pointer_mut(parent).and_then(Value::as_object_mut) {
            map.remove(&key);
        }
    } else if let Some(target) = snapshot.pointer_mut(&pointer) {
        *target = odd_value(rng);
    }
}

fn check_invariants(p: &Provisioning, now: chrono::DateTime<chrono::Utc>) -> Result<(), String> {
    for service in &p.services {
        for step in &service.steps {
            let context = format!("{} {:?}: {step:?}", service.name, step.id);
            if step.duration_sec.is_some() && step.started_at.is_none() {
                return Err(format!("a duration with no known start: {context}"));
            }
            match (
                step.status,
                step.started_at,
                step.ended_at,
                step.duration_sec,
            ) {
                (StepStatus::Done | StepStatus::Failed, Some(start), Some(end), Some(d))
                    if end < start
                        || i64::try_from(d).ok() != Some((end - start).num_seconds()) =>
                {
                    return Err(format!("duration disagrees with its times: {context}"));
                }
                (StepStatus::Running, Some(start), _, Some(d))
                    if start > now
                        || i64::try_from(d).ok() != Some((now - start).num_seconds()) =>
                {
                    return Err(format!("running duration is not now − start: {context}"));
                }
                (StepStatus::Waiting, _, _, Some(_)) => {
                    return Err(format!("a waiting step with a duration: {context}"));
                }
                _ => {}
            }
        }
        if service.events.windows(2).any(|w| w[0].at_sec > w[1].at_sec) {
            return Err(format!("{}: events out of order", service.name));
        }
    }
    Ok(())
}

fn derive(value: &Value) -> (Provisioning, chrono::DateTime<chrono::Utc>) {
    let snapshot = Snapshot::from_json(&value.to_string()).unwrap();
    (derive_provisioning(&snapshot), snapshot.now)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn object_order_never_changes_the_answer(index in 0usize..64, seed in any::<u64>()) {
        let fixtures = fixtures();
        let original = &fixtures[index % fixtures.len()];
        let (expected, _) = derive(original);
        let (got, _) = derive(&shuffled(original, seed));
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn corrupted_snapshots_never_panic_nor_invent_durations(
        index in 0usize..64,
        seeds in proptest::collection::vec(any::<u64>(), 1..12),
    ) {
        let fixtures = fixtures();
        let mut snapshot = fixtures[index % fixtures.len()].clone();
        for seed in seeds {
            corrupt(&mut snapshot, &mut Rng(seed | 1));
        }
        // A corrupted pull request may no longer parse; that is a clear error, not a panic.
        if let Ok(parsed) = Snapshot::from_json(&snapshot.to_string()) {
            let derived = derive_provisioning(&parsed);
            if let Err(problem) = check_invariants(&derived, parsed.now) {
                return Err(TestCaseError::fail(problem));
            }
        }
    }
}

#[test]
fn every_service_derives_the_same_from_its_own_snapshot() {
    let mut services = 0;
    for (name, fixture) in every_fixture() {
        let snapshot = Snapshot::from_json(&fixture.to_string()).unwrap();
        services += narrowing_agrees(name, &snapshot).unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(services >= 30, "only {services} services in the fixtures");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The same, whatever the order the objects come in.
    #[test]
    fn narrowing_agrees_in_any_order(index in 0usize..64, seed in any::<u64>()) {
        let every = every_fixture();
        let (name, fixture) = &every[index % every.len()];
        let snapshot = Snapshot::from_json(&shuffled(fixture, seed).to_string()).unwrap();
        if let Err(problem) = narrowing_agrees(name, &snapshot) {
            return Err(TestCaseError::fail(problem));
        }
    }
}

#[test]
fn the_fixtures_themselves_hold_the_invariants() {
    for fixture in fixtures() {
        let (derived, now) = derive(fixture);
        check_invariants(&derived, now).unwrap();
    }
}

#[test]
fn corruption_really_changes_snapshots() {
    let original = &fixtures()[0];
    let (expected, _) = derive(original);
    let changed = (1..=60u64)
        .filter(|&seed| {
            let mut snapshot = original.clone();
            for i in 0..4 {
                corrupt(&mut snapshot, &mut Rng(seed * 7919 + i));
            }
            Snapshot::from_json(&snapshot.to_string())
                .map_or(true, |s| derive_provisioning(&s) != expected)
        })
        .count();
    assert!(
        changed >= 15,
        "only {changed} of 60 corruptions changed anything"
    );
}

/// `fixture` with every Tekton Chains provenance payload naming its source elsewhere.
fn with_hostile_provenance(fixture: &Value) -> Value {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let mut fixture = fixture.clone();
    let objects = fixture["clusters"]
        .as_object_mut()
        .into_iter()
        .flat_map(|c| c.values_mut())
        .filter_map(Value::as_array_mut)
        .flatten();
    for object in objects {
        let Some(annotations) = object["metadata"]["annotations"].as_object_mut() else {
            continue;
        };
        for (key, value) in annotations.iter_mut() {
            let Some(decoded) = key
                .starts_with("chains.tekton.dev/payload-")
                .then(|| engine.decode(value.as_str()?).ok())
                .flatten()
            else {
                continue;
            };
            let hostile = String::from_utf8_lossy(&decoded)
                .replace("git+https://github.com", "git+https://evil.example");
            *value = Value::String(engine.encode(hostile));
        }
    }
    fixture
}

/// Every link the derivations put on a page for `snapshot`: the steps' links and each
/// service's cloud console.
fn links_of(snapshot: &Snapshot) -> Vec<String> {
    let provisioning = derive_provisioning(snapshot);
    let mut links: Vec<String> = provisioning
        .services
        .iter()
        .flat_map(|s| s.steps.iter())
        .flat_map(|step| step.links.iter().map(|l| l.url.clone()))
        .collect();
    for service in &provisioning.services {
        let deploys = tower_shared::cloud::derive_cloud_deploys(snapshot, &service.name);
        links.extend(deploys.console_url);
    }
    // The Deployments tab of every service an object belongs to: Argo CD revisions, and the
    // evidence's source commits and transparency log entries.
    for service in snapshot.known_services() {
        let tab = tower_shared::deployments::derive_deployments(snapshot, service);
        for env in tab.environments.iter().flatten() {
            links.extend(env.argo.iter().filter_map(|a| a.revision_url.clone()));
            let images = env.rollout.iter().flat_map(|r| [&r.stable, &r.canary]);
            for evidence in images.flatten().filter_map(|rs| rs.evidence.as_ref()) {
                let provenance = evidence.provenance.as_ref();
                links.extend(provenance.and_then(|p| p.source.as_ref()?.url.clone()));
                links.extend(evidence.transparency.as_ref().and_then(|t| t.url.clone()));
            }
        }
    }
    links
}

#[test]
fn links_from_tenant_data_never_leave_their_hosts() {
    let (mut plain, mut hostile) = (Vec::new(), Vec::new());
    let mut fixtures = every_fixture().to_vec();
    fixtures.extend(read_fixtures("deployments"));
    fixtures.extend(read_fixtures("releases"));
    for (name, fixture) in &fixtures {
        let text = fixture.to_string();
        plain.extend(links_of(&Snapshot::from_json(&text).unwrap()));
        let text = with_hostile_provenance(fixture).to_string();
        // A Repository's page elsewhere, a PR's page as script, a region that would move the
        // console's host, a cluster and service that would add path pieces, an Infisical
        // base over plain HTTP.
        let text = text
            .replace(
                r#""htmlUrl":"https://github.com"#,
                r#""htmlUrl":"https://evil.example"#,
            )
            .replace(
                r#""html_url":"https://github.com"#,
                r#""html_url":"javascript:alert(1)//github.com"#,
            )
            .replace(r#"\"region\": \""#, r#"\"region\": \"evil.example/#"#)
            .replace(r#"\"cluster\": \""#, r#"\"cluster\": \"../../x?y#"#)
            .replace(r#""infisicalUrl":"https://"#, r#""infisicalUrl":"http://"#)
            // An Argo CD Application's repository elsewhere; a transparency log that is not
            // the public one.
            .replace(
                r#""repoURL":"https://github.com"#,
                r#""repoURL":"https://evil.example"#,
            )
            .replace(
                r#""chains.tekton.dev/transparency":"https://rekor.sigstore.dev"#,
                r#""chains.tekton.dev/transparency":"https://rekor.sigstore.dev.evil.example"#,
            );
        let links = links_of(&Snapshot::from_json(&text).unwrap());
        // Tower's own pages (`/tower?…`, values encoded by `links::tower_page`) stay on its
        // origin whatever the data says.
        hostile.extend(
            links
                .into_iter()
                .filter(|l| !l.starts_with("/tower?"))
                .map(|l| format!("{name}: {l}")),
        );
    }
    // The fixtures do carry every sort of link, so their absence below means something.
    for host in [
        "https://github.com/",
        ".console.aws.amazon.com/",
        "https://infisical.hangar.example/",
        "https://search.sigstore.dev/",
        "/commit/",
    ] {
        assert!(
            plain.iter().any(|l| l.contains(host)),
            "no fixture links to {host}"
        );
    }
    assert_eq!(
        hostile,
        Vec::<String>::new(),
        "links that follow tenant data elsewhere"
    );
}
