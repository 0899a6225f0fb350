//! The `tower` command line: bad input gets a one-line reason and exit code 2.

use std::process::Command;

use crate::support::{dist, tower_bin, Demo};

fn tower(args: &[&str]) -> (i32, String) {
    let out = Command::new(tower_bin()).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_names_every_subcommand() {
    let out = Command::new(tower_bin()).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for word in ["demo", "serve", "never writes to a cluster"] {
        assert!(help.contains(word), "--help lacks {word:?}:\n{help}");
    }
}

#[test]
fn demo_without_a_built_frontend_says_how_to_build_it() {
    let empty = tempfile::tempdir().unwrap();
    let (code, stderr) = tower(&[
        "demo",
        "--port",
        "0",
        "--dist",
        empty.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("the frontend is not built"), "{stderr}");
    assert!(stderr.contains("cargo xtask demo"), "{stderr}");
}

#[test]
fn serve_rejects_a_malformed_fleet_file_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fleet.json");
    std::fs::write(&file, r#"{"apps": "not a list"}"#).unwrap();
    let dist = dist().unwrap();
    let (code, stderr) = tower(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--fleet-file",
        file.to_str().unwrap(),
        "--dist",
        dist.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("fleet.json is not a fleet"), "{stderr}");
}

#[test]
fn unknown_arguments_are_refused() {
    let (code, stderr) = tower(&["demo", "--port", "not-a-port"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--port"), "{stderr}");
    let (code, stderr) = tower(&["demo", "--port", "0", "--start", "yesterday"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--start") && stderr.contains("not an RFC 3339 time"),
        "{stderr}"
    );
    let (code, stderr) = tower(&["demo", "--port", "0", "--guest-owns", "team-b"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--guest-owns") && stderr.contains("is not an entity ref"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_demo_guests_groups_are_chosen_at_start() {
    // By default the guest is in team-a; here in team-b instead, as Backstage's
    // `auth.providers.guest.ownershipEntityRefs` would make it.
    let demo = Demo::start_with(&["--speed", "0", "--guest-owns", "group:default/team-b"])
        .await
        .unwrap();
    let fleet = hangar_sim::stories::fleet::SteadyFleet::new(1, crate::support::test_start());
    let of = |owner: &str| {
        fleet
            .apps
            .iter()
            .find(|a| a.owner == owner)
            .unwrap()
            .name
            .clone()
    };
    for (owner, may) in [("team-b", true), ("team-a", false)] {
        let access: serde_json::Value = demo
            .get_json(&format!("api/access?service={}", of(owner)))
            .await
            .unwrap();
        assert_eq!(access["mayPromote"], may, "{owner}: {access}");
    }
}

#[tokio::test]
async fn demo_stops_cleanly_on_ctrl_c() {
    use std::os::unix::fs::PermissionsExt as _;
    let demo = Demo::start().await.unwrap();
    let url = demo.url.clone();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // The demo's files are in a folder of its own: a name nobody could guess ahead (not
    // its process id), that only this user may enter.
    let dir = demo
        .config_file
        .clone()
        .unwrap()
        .parent()
        .unwrap()
        .to_owned();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let suffix = name
        .strip_prefix("tower-demo-")
        .unwrap_or_else(|| panic!("{name}"));
    assert!(suffix.parse::<u32>().is_err(), "a guessable folder: {name}");
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{}", dir.display());
    let status = demo.interrupt().await.unwrap();
    assert!(status.success(), "tower demo exited with {status}");
    assert!(
        reqwest::get(format!("{url}healthz")).await.is_err(),
        "still answering after Ctrl-C"
    );
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn offline_commands_name_the_bad_field_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.json");
    std::fs::write(
        &file,
        r#"{"now": "2026-11-30T10:00:00Z", "pullRequests": [{"repo": 3}]}"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let (code, stderr) = tower(&["provisioning", "--snapshot", path]);
    assert_eq!(code, 2);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("snap.json: pullRequests[0].repo: invalid type"),
        "{stderr}"
    );

    let (code, stderr) = tower(&["cloud-deploys", "--snapshot", path, "--service", "Bad_Name"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not a service name"), "{stderr}");

    let (code, stderr) = tower(&["provisioning", "--snapshot", "/nonexistent/snap.json"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("cannot read /nonexistent/snap.json"),
        "{stderr}"
    );
}

#[test]
fn offline_commands_print_the_derivation_as_json() {
    let fixture = crate::support::root().join("fixtures/provisioning/nodejs-5-building.json");
    let out = Command::new(tower_bin())
        .args([
            "provisioning",
            "--snapshot",
            fixture.to_str().unwrap(),
            "--service",
            "shop",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["services"][0]["name"], "shop");
    assert_eq!(json["services"][0]["steps"][8]["id"], "first-build");
    assert_eq!(
        json["services"][0]["steps"][9]["durationSec"],
        serde_json::Value::Null
    );

    let fixture = crate::support::root().join("fixtures/cloud-deploys/ecs-failed.json");
    let out = Command::new(tower_bin())
        .args([
            "cloud-deploys",
            "--snapshot",
            fixture.to_str().unwrap(),
            "--service",
            "orders-api",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["capability"], "cloud-runtime");
    assert_eq!(json["latestFailure"]["failedTask"], "deploy-aws-ecs");
}

#[test]
fn demo_rejects_a_scenario_that_is_not_a_snapshot_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("world.json");
    std::fs::write(&file, r#"{"clusters": {}}"#).unwrap();
    let dist = dist().unwrap();
    let (code, stderr) = tower(&[
        "demo",
        "--port",
        "0",
        "--scenario",
        file.to_str().unwrap(),
        "--dist",
        dist.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("world.json is not a snapshot file"),
        "{stderr}"
    );
    assert!(stderr.contains("now"), "names the missing field: {stderr}");
}

#[test]
fn serve_rejects_a_bad_config_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let dist = dist().unwrap();
    for (text, field) in [
        ("clusters:\n  - name: Prod_EU\n", "clusters[0].name"),
        (
            "github:\n  owner: acme\n  apiUrl: ftp://x\n",
            "github.apiUrl",
        ),
        ("listen: nowhere\n", "listen"),
    ] {
        let file = dir.path().join("tower.yaml");
        std::fs::write(&file, text).unwrap();
        let (code, stderr) = tower(&[
            "serve",
            "--config",
            file.to_str().unwrap(),
            "--dist",
            dist.to_str().unwrap(),
        ]);
        assert_ne!(code, 0, "{text}");
        assert!(
            stderr.contains("tower.yaml") && stderr.contains(field),
            "{text}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let (code, stderr) = tower(&["serve", "--config", "/no/such/tower.yaml"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("/no/such/tower.yaml"), "{stderr}");
}

#[test]
fn serve_refuses_to_open_itself_to_the_network() {
    let dir = tempfile::tempdir().unwrap();
    let dist = dist().unwrap();
    let file = dir.path().join("tower.yaml");
    std::fs::write(&file, "openApi: true\nlisten: 0.0.0.0:0\n").unwrap();
    let config = file.to_str().unwrap();
    for args in [
        vec!["serve", "--config", config],
        vec!["serve", "--config", config, "--listen", "[::]:0"],
    ] {
        let mut args = args.clone();
        args.extend(["--dist", dist.to_str().unwrap()]);
        let (code, stderr) = tower(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains("openApi") && stderr.contains("insecureOnNetwork"),
            "{stderr}"
        );
    }
}
