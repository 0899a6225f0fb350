//! The offline derivation commands: read a snapshot file, print JSON.

use std::io::{Read, Write};
use std::path::Path;

use anyhow::Context;
use serde::Serialize;
use tower_shared::provisioning::{derive_provisioning, Provisioning};
use tower_shared::snapshot::Snapshot;

/// Reads and parses a snapshot; `-` is standard input. Errors name the file and the field.
pub fn read_snapshot(path: &Path) -> anyhow::Result<Snapshot> {
    let (label, text) = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the snapshot from standard input")?;
        ("<stdin>".to_owned(), text)
    } else {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        (path.display().to_string(), text)
    };
    Snapshot::from_json(&text).map_err(|err| anyhow::anyhow!("{label}: {err}"))
}

/// The provisioning derivation, narrowed to one service when asked.
pub fn provisioning(snapshot: &Snapshot, service: Option<&str>) -> Provisioning {
    let mut derived = derive_provisioning(snapshot);
    if let Some(name) = service {
        derived.services.retain(|s| &*s.name == name);
        if derived.services.is_empty() {
            tracing::warn!("no tracked service is called {name}");
        }
    }
    derived
}

/// `tower dora`: the four keys of `service`, or of every app the snapshot deploys (as the
/// fleet page's are); an error when the snapshot knows no such service.
pub fn dora(snapshot: &Snapshot, service: Option<&str>, days: u32) -> anyhow::Result<()> {
    let services: std::collections::BTreeSet<String> = match service {
        Some(name) => {
            anyhow::ensure!(
                snapshot.knows(name),
                "the snapshot holds no service called {name}"
            );
            [name.to_owned()].into()
        }
        None => tower_shared::fleet::fleet_apps(snapshot)
            .into_iter()
            .map(|a| a.name)
            .collect(),
    };
    let parts = services
        .iter()
        .map(|s| (s.as_str(), snapshot.for_service(s)));
    print_json(&crate::tabs::dora_answer(
        service,
        days,
        parts,
        snapshot.now,
        &tower_shared::api::Health::default(),
    ))
}

/// `tower fleet`: the fleet (or one app's row of it); an error when the snapshot deploys no
/// such app.
pub fn fleet(snapshot: &Snapshot, service: Option<&str>) -> anyhow::Result<()> {
    use tower_shared::fleet;
    let mut apps = fleet::fleet_apps(snapshot);
    fleet::with_provisioning(
        &mut apps,
        &tower_shared::provisioning::derive_provisioning(snapshot).services,
    );
    let mut fleet = fleet::assemble(snapshot.now, apps);
    if let Some(name) = service {
        fleet.apps.retain(|a| a.name == name);
        anyhow::ensure!(
            !fleet.apps.is_empty(),
            "the snapshot knows no service {name}: no Argo CD Application deploys it, no deploy run, no provisioning"
        );
    }
    print_json(&fleet)
}

/// `tower state`: one service's state in each environment; an error when the snapshot
/// deploys it nowhere.
pub fn state(snapshot: &Snapshot, service: &str) -> anyhow::Result<()> {
    let mut states = tower_shared::state::derive(snapshot, service);
    if states.is_empty() {
        states = tower_shared::state::of_cloud(snapshot, service);
    }
    anyhow::ensure!(
        !states.is_empty(),
        "the snapshot's Argo CD Applications and deploy runs deploy {service} nowhere"
    );
    print_json(&tower_shared::state::ServiceState {
        service: service.to_owned(),
        environments: states,
    })
}

/// Pretty JSON on stdout, newline-terminated.
pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value).context("writing JSON")?;
    writeln!(out).context("writing JSON")?;
    Ok(())
}

/// `tower pipelines`: the service's runs, or one run's graph; an error when the snapshot
/// holds neither the service nor the run.
pub fn pipelines(snapshot: &Snapshot, service: &str, run: Option<&str>) -> anyhow::Result<()> {
    let pipelines = tower_shared::pipelines::derive(snapshot, service);
    let health = tower_shared::api::Health::default();
    match run {
        Some(run) => {
            let graph = pipelines.graph(run).with_context(|| {
                format!("no PipelineRun called {run} in {}", pipelines.namespace)
            })?;
            print_json(&tower_shared::api::PipelineRunAnswer {
                service: service.to_owned(),
                graph: graph.clone(),
                health,
            })
        }
        None => print_json(&tower_shared::api::PipelineRunsAnswer {
            service: service.to_owned(),
            pipelines: pipelines.pipeline_names(),
            total: pipelines.runs.len(),
            namespace: pipelines.namespace,
            runs: pipelines.runs,
            next: None,
            health,
        }),
    }
}

/// `tower release-record`: the record of `release` (version or tag) of `service` as the
/// snapshot shows it, in `format`; an error naming the releases there are when it has none.
pub fn release_record(
    snapshot: &Snapshot,
    service: &str,
    release: &str,
    format: crate::cli::RecordFormat,
) -> anyhow::Result<()> {
    let matrix = tower_shared::releases::of_snapshot(snapshot, service);
    let row = matrix
        .releases
        .iter()
        .find(|r| {
            tower_shared::image::release_name(&r.image) == Some(release)
                || r.version.as_deref() == Some(release)
        })
        .with_context(|| {
            let known: Vec<&str> = matrix
                .releases
                .iter()
                .filter_map(|r| tower_shared::image::release_name(&r.image))
                .collect();
            format!(
                "{service} has no release {release} in the snapshot (it has: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )
        })?;
    let pipelines = tower_shared::pipelines::derive(snapshot, service);
    let deployments = tower_shared::deployments::derive_deployments(snapshot, service);
    let prod = deployments
        .environments
        .iter()
        .flatten()
        .find(|e| tower_shared::hangar::is_production(&e.name));
    let promotion =
        tower_shared::records::promotion_of(snapshot.pull_requests.iter().flatten(), &row.image);
    let record = tower_shared::records::draft(row, service, &pipelines, prod, None, promotion);
    let mut out = std::io::stdout().lock();
    match format {
        crate::cli::RecordFormat::Json => return print_json(&record),
        crate::cli::RecordFormat::Html => out.write_all(crate::export::html(&record).as_bytes()),
        crate::cli::RecordFormat::Pdf => out.write_all(&crate::export::pdf(&record)),
    }
    .context("writing the record")?;
    out.flush().context("writing the record")
}
