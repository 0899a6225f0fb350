//! The provisioning derivation over 10,000 services.
//!
//! The snapshot is `fixtures/provisioning/mixed-fleet.json` (five services in different
//! phases: NodeJS building, SpringBoot with a failing repository, Go deploying to ECS, a
//! Lambda whose deploy failed, an InfraService that is up) copied 2,000 times under new
//! names. Run with `cargo bench -p tower-shared`; criterion prints the time per run and, as
//! throughput, services per second. Two figures:
//! - `world`: reading the raw objects into a `World`, which settles every step as far as
//!   the objects say (done when objects change);
//! - `derive`: deriving every service from a built `World` at a `now` (done every clock
//!   tick): durations, the clock-dependent hints and the grouping.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::Value;
use tower_shared::provisioning::{derive, World};
use tower_shared::snapshot::Snapshot;

const SERVICES: [&str; 5] = ["shop", "ledger", "orders-api", "thumbnailer", "events-bus"];
const COPIES: usize = 2_000;

fn fleet_snapshot() -> Snapshot {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/provisioning/mixed-fleet.json"
    );
    let text = std::fs::read_to_string(path).expect("the mixed-fleet fixture");
    let template: Value = serde_json::from_str(&text).expect("fixture JSON");
    let parts = ["clusters", "pullRequests", "catalog", "observed"];
    let texts: Vec<String> = parts.iter().map(|p| template[p].to_string()).collect();

    let mut merged = template.clone();
    merged["clusters"] = serde_json::json!({});
    merged["pullRequests"] = serde_json::json!([]);
    merged["catalog"] = serde_json::json!([]);
    merged["observed"] = serde_json::json!({});
    for copy in 0..COPIES {
        let rename = |text: &str| {
            SERVICES.iter().fold(text.to_owned(), |t, name| {
                t.replace(name, &format!("{name}-{copy}"))
            })
        };
        let values: Vec<Value> = texts
            .iter()
            .map(|t| serde_json::from_str(&rename(t)).expect("renamed JSON"))
            .collect();
        for (cluster, objects) in values[0].as_object().expect("clusters") {
            let list = merged["clusters"][cluster]
                .as_array_mut()
                .map(std::mem::take);
            let mut list = list.unwrap_or_default();
            list.extend(objects.as_array().expect("objects").iter().cloned());
            merged["clusters"][cluster] = Value::Array(list);
        }
        for (key, value) in [("pullRequests", &values[1]), ("catalog", &values[2])] {
            let list = merged[key].as_array_mut().expect("a list");
            list.extend(value.as_array().expect("a list").iter().cloned());
        }
        for (service, memory) in values[3].as_object().expect("observed") {
            merged["observed"][service] = memory.clone();
        }
    }
    Snapshot::from_json(&merged.to_string()).expect("a valid snapshot")
}

fn bench(c: &mut Criterion) {
    let snapshot = fleet_snapshot();
    let world = World::new(&snapshot);
    let services = derive(&world, snapshot.now).services.len();
    assert_eq!(services, SERVICES.len() * COPIES, "every copy is derived");
    let mut group = c.benchmark_group("provisioning");
    group.throughput(Throughput::Elements(services as u64));
    group.sample_size(10);
    group.bench_function("world: read 10,000 services' objects", |b| {
        b.iter(|| World::new(std::hint::black_box(&snapshot)));
    });
    group.bench_function("derive: 10,000 services", |b| {
        b.iter(|| derive(std::hint::black_box(&world), snapshot.now));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
