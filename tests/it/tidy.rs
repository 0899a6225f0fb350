//! The `shared` crate stays pure: no IO or async/cluster/GitHub/database/browser crates in
//! its dependency tree, no clock reads in its source, and chrono without its clock.

use std::path::Path;
use std::process::Command;

use crate::support::root;

/// Crates that would mean `shared` does IO or only builds for one side.
const FORBIDDEN_CRATES: &[&str] = &[
    "tokio",
    "mio",
    "hyper",
    "reqwest",
    "axum",
    "kube",
    "kube-client",
    "kube-runtime",
    "k8s-openapi",
    "octocrab",
    "sqlx",
    "sqlx-core",
    "rusqlite",
    "gloo-net",
    "gloo-timers",
    "gloo-utils",
    "web-sys",
    "js-sys",
    "wasm-bindgen",
];

/// Source patterns that read a clock or do IO.
const FORBIDDEN_CALLS: &[&str] = &[
    "Utc::now",
    "Local::now",
    "SystemTime::now",
    "Instant::now",
    "Date::now",
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
];

fn cargo(args: &[&str]) -> String {
    crate::support::stdout_of(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
            .current_dir(root())
            .args(args),
    )
}

#[test]
fn shared_depends_on_no_io_crate_for_any_target() {
    let tree = cargo(&[
        "tree",
        "--locked",
        "-p",
        "tower-shared",
        "-e",
        "normal",
        "--target",
        "all",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]);
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        names.contains(&"serde"),
        "unexpected cargo tree output:\n{tree}"
    );
    let bad: Vec<&&str> = names
        .iter()
        .filter(|n| FORBIDDEN_CRATES.contains(n))
        .collect();
    assert!(bad.is_empty(), "tower-shared depends on {bad:?}");
}

#[test]
fn shared_uses_chrono_without_its_clock() {
    let tree = cargo(&[
        "tree",
        "--locked",
        "-p",
        "tower-shared",
        "-e",
        "features",
        "--prefix",
        "none",
    ]);
    assert!(tree.contains("chrono feature \"serde\""), "{tree}");
    assert!(
        !tree.contains("chrono feature \"clock\""),
        "tower-shared enables chrono's clock: derivations must take `now`"
    );
}

/// Every forbidden call in `text`, as `line: pattern`.
fn forbidden_calls(text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .flat_map(|(i, line)| {
            FORBIDDEN_CALLS
                .iter()
                .filter(move |p| line.contains(*p))
                .map(move |p| format!("{}: {p}", i + 1))
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading shared/src") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn shared_source_reads_no_clock_and_does_no_io() {
    let mut files = Vec::new();
    rust_files(&root().join("shared/src"), &mut files);
    assert!(files.len() >= 2, "found no sources under shared/src");
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("reading a source file");
        found.extend(
            forbidden_calls(&text)
                .into_iter()
                .map(|hit| format!("{}:{hit}", file.display())),
        );
    }
    assert!(found.is_empty(), "shared must stay pure: {found:#?}");
}

#[test]
fn the_scanner_catches_clock_reads() {
    let code = "fn f() {\n    let t = chrono::Utc::now();\n    // Utc::now in a comment is fine\n}";
    assert_eq!(forbidden_calls(code), ["2: Utc::now"]);
}

/// The backend's paths a frontend file names, as `line: text`.
fn backend_paths(text: &str) -> Vec<String> {
    const PREFIXES: &[&str] = &[
        "\"/api",
        "\"/auth",
        "\"/provisioning-history",
        "\"/catalog",
        "\"/live-runs",
        "\"/pull-requests",
        "\"/pending-requests",
        "\"/request-pr",
        "\"/config/",
    ];
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .filter(|(_, line)| PREFIXES.iter().any(|p| line.contains(p)))
        .map(|(i, line)| format!("{}: {}", i + 1, line.trim()))
        .collect()
}

#[test]
fn only_the_frontends_api_module_names_backend_routes() {
    let mut files = Vec::new();
    rust_files(&root().join("frontend/src"), &mut files);
    assert!(files.len() >= 5, "found no sources under frontend/src");
    let found: Vec<String> = files
        .iter()
        .filter(|f| !f.ends_with("api.rs"))
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).expect("reading a source file");
            backend_paths(&text)
                .into_iter()
                .map(|hit| format!("{}:{hit}", file.display()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        found.is_empty(),
        "backend routes outside frontend/src/api.rs: {found:#?}"
    );
    assert_eq!(
        backend_paths("let r = Request::get(\"/api/fleet\");\n// \"/api/x\" in a comment"),
        ["1: let r = Request::get(\"/api/fleet\");"]
    );
}

/// One list of watched kinds: every Hangar XR kind is in it, and the simulator serves each
/// with the same group, version and plural — so a kind cannot be added to one place and
/// forgotten in another.
#[test]
fn watched_kinds_match_the_xr_kinds_and_the_simulators_resources() {
    use tower_shared::hangar::{ServiceKind, WATCHED_KINDS, XR_GROUP};
    for kind in ServiceKind::ALL {
        assert!(
            WATCHED_KINDS
                .iter()
                .any(|w| w.group == XR_GROUP && w.kind == kind.as_str()),
            "the XR kind {} is not watched",
            kind.as_str()
        );
    }
    let xr_kinds: Vec<&str> = WATCHED_KINDS
        .iter()
        .filter(|w| w.group == XR_GROUP)
        .map(|w| w.kind)
        .collect();
    for kind in &xr_kinds {
        assert!(
            ServiceKind::from_kind(kind).is_some(),
            "{kind} is watched in {XR_GROUP} but is not a ServiceKind"
        );
    }
    for watched in WATCHED_KINDS {
        let served =
            hangar_sim::resources::by_plural(watched.group, watched.version, watched.plural);
        assert_eq!(
            served.map(|r| r.kind),
            Some(watched.kind),
            "the simulator does not serve {watched:?}"
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for watched in WATCHED_KINDS {
        assert!(
            seen.insert((watched.group, watched.kind)),
            "{watched:?} is listed twice"
        );
    }
}

/// Tower watches nothing its derivations do not read: every watched kind is named by a
/// derivation in `shared/src`, but Hangar's own kinds (`*.hangar.io`: the XRs, read through
/// `ServiceKind`, and the composed ones such as the CI/CD child XR, read by group).
#[test]
fn every_watched_kind_is_read_by_a_derivation() {
    use tower_shared::hangar::WATCHED_KINDS;
    for watched in WATCHED_KINDS
        .iter()
        .filter(|w| !w.group.ends_with("hangar.io"))
    {
        let literal = format!("\"{}\"", watched.kind);
        let readers = lines_matching("shared/src", &[], |line| {
            line.contains(&literal) && !line.contains("watched(")
        });
        assert!(
            !readers.is_empty(),
            "{} is watched but no derivation reads it: stop watching it",
            watched.kind
        );
    }
    assert!(
        !WATCHED_KINDS
            .iter()
            .any(|w| w.kind == "Secret" || w.kind == "ConfigMap"),
        "Tower never watches Secrets or ConfigMaps"
    );
}

/// Who Tower's roles grant what: (namespace or None, group, plural) of the watched kinds
/// (`get`, `list`, `watch`), and of what is read on request (`get` alone). Kinds other than
/// ClusterRole and Role (bindings, …) are passed over; any other verbs fail the test.
pub(crate) type Grants = std::collections::BTreeSet<(Option<String>, String, String)>;

pub(crate) fn grants_in(yaml: &str) -> (Grants, Grants) {
    use serde::Deserialize as _;
    let (mut granted, mut on_request) = (Grants::new(), Grants::new());
    for document in serde_yaml_ng::Deserializer::from_str(yaml) {
        let role = serde_json::Value::deserialize(document).unwrap();
        let namespace = match role["kind"].as_str() {
            Some("ClusterRole") => None,
            Some("Role") => Some(role["metadata"]["namespace"].as_str().unwrap().to_owned()),
            _ => continue,
        };
        for rule in role["rules"].as_array().unwrap() {
            let verbs: Vec<&str> = rule["verbs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            // Watched kinds: get, list, watch; what is read on request: get alone.
            let granted = match verbs.as_slice() {
                ["get", "list", "watch"] => &mut granted,
                ["get"] => &mut on_request,
                _ => panic!("Tower's roles grant {verbs:?}: {rule}"),
            };
            for group in rule["apiGroups"].as_array().unwrap() {
                for resource in rule["resources"].as_array().unwrap() {
                    let key = (
                        namespace.clone(),
                        group.as_str().unwrap().to_owned(),
                        resource.as_str().unwrap().to_owned(),
                    );
                    assert!(granted.insert(key.clone()), "{key:?} granted twice");
                }
            }
        }
    }
    (granted, on_request)
}

/// `deploy/base/rbac.yaml` (docs/permissions.md explains it) gives the RBAC Tower needs:
/// `get`, `list`, `watch` on exactly the watched kinds — a ClusterRole for those read across
/// clusters, a Role in the namespace of each kind read in one namespace.
#[test]
fn the_rbac_is_exactly_the_watched_kinds_read_only() {
    use tower_shared::hangar::{READ_ON_REQUEST, WATCHED_KINDS};
    let yaml = std::fs::read_to_string(root().join("deploy/base/rbac.yaml")).unwrap();
    let (granted, on_request) = grants_in(&yaml);
    let asked: Grants = READ_ON_REQUEST
        .iter()
        .map(|(group, resource)| (None, (*group).to_owned(), (*resource).to_owned()))
        .collect();
    assert_eq!(
        on_request, asked,
        "deploy/base/rbac.yaml vs READ_ON_REQUEST"
    );
    let watched: Grants = WATCHED_KINDS
        .iter()
        .map(|w| {
            (
                w.namespace.map(str::to_owned),
                w.group.to_owned(),
                w.plural.to_owned(),
            )
        })
        .collect();
    assert_eq!(granted, watched, "deploy/base/rbac.yaml vs WATCHED_KINDS");
}

/// README's accessibility figure counts the pages the browser tests check: one distinct
/// `check_page("name")` each (every call names its page literally, so the count is exact).
#[test]
fn readme_counts_the_pages_axe_checks() {
    let mut files = Vec::new();
    rust_files(&root().join("tests/it"), &mut files);
    let mut names = std::collections::BTreeSet::new();
    for file in files
        .iter()
        .filter(|f| !f.ends_with("support.rs") && !f.ends_with("tidy.rs"))
    {
        let text = std::fs::read_to_string(file).unwrap();
        for call in text.split(".check_page(").skip(1) {
            let name = call
                .strip_prefix('"')
                .and_then(|rest| rest.split_once('"'))
                .map(|(name, _)| name)
                .unwrap_or_else(|| {
                    panic!(
                        "{}: check_page with a name that is not a literal",
                        file.display()
                    )
                });
            names.insert(name.to_owned());
        }
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let stated = format!("| {} pages checked", names.len());
    assert!(
        readme.contains(&stated),
        "README.md should say {stated:?}: the browser tests check {names:?}"
    );
}

/// A source file's text before its `#[cfg(test)]` module (tests may build JSON by hand).
fn non_test_code(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

/// `(file, line: text)` of every line in `dir`'s Rust files (outside tests and comments)
/// that `matches`, skipping files `allowed` names.
fn lines_matching(dir: &str, allowed: &[&str], matches: impl Fn(&str) -> bool) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&root().join(dir), &mut files);
    assert!(!files.is_empty(), "found no sources under {dir}");
    files
        .iter()
        .filter(|f| !allowed.iter().any(|a| f.ends_with(a)))
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).expect("reading a source file");
            non_test_code(&text)
                .lines()
                .enumerate()
                .filter(|(_, line)| !line.trim_start().starts_with("//"))
                .filter(|(_, line)| matches(line))
                .map(|(i, line)| format!("{}:{}: {}", file.display(), i + 1, line.trim()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every route's answer is a `tower_shared::api` type: the backend declares no serialisable
/// type of its own (but its config file's) and builds no JSON by hand (but the requests
/// `gitops` sends GitHub and `routes::argocd` sends Argo CD); the frontend
/// declares no type to deserialise an answer into.
#[test]
fn answer_types_are_declared_in_shared_only() {
    let derives = |trait_name: &'static str| {
        move |line: &str| {
            let line = line.trim_start();
            (line.starts_with("#[derive(") || line.starts_with("#[derive ("))
                && line.contains(trait_name)
        }
    };
    let backend_types = lines_matching("backend/src", &["config.rs"], derives("Serialize"));
    assert!(
        backend_types.is_empty(),
        "answer types belong in shared/src/api.rs: {backend_types:#?}"
    );
    // `gitops.rs` and `routes/argocd.rs` build the bodies of their requests to GitHub and
    // Argo CD (in those APIs' schemas), not answers.
    let by_hand = lines_matching("backend/src", &["gitops.rs", "routes/argocd.rs"], |line| {
        line.contains("json!(")
    });
    assert!(
        by_hand.is_empty(),
        "answers are shared::api types, not JSON built by hand: {by_hand:#?}"
    );
    let frontend_types = lines_matching("frontend/src", &[], derives("Deserialize"));
    assert!(
        frontend_types.is_empty(),
        "the frontend reads shared::api types: {frontend_types:#?}"
    );
    // The check sees what it must.
    assert!(derives("Serialize")(
        "    #[derive(Clone, serde::Serialize)]"
    ));
    assert!(!derives("Serialize")("use serde::Serialize;"));
    assert_eq!(
        non_test_code("fn a() {}\n#[cfg(test)]\nmod tests { json!({}) }"),
        "fn a() {}\n"
    );
}

/// The browser decodes every answer as its `shared::api` type: no page reads an answer as
/// a JSON tree by key (`answer["items"]`, `v.get("name")`), nor keeps one as a
/// `serde_json::Value` to read later — the one `Value` is `api::wire_name`'s, which spells a
/// variant as the wire does.
#[test]
fn the_frontend_reads_answers_as_their_types_not_by_key() {
    let by_key = |line: &str| {
        let indexed = line.match_indices("[\"").any(|(i, _)| {
            line[..i]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ')' || c == ']')
        });
        indexed
            || line.contains(".as_object()")
            || line.contains(".as_array()")
            || (line.contains("serde_json::Value") && !line.contains("Value::String(name)"))
    };
    let reads = lines_matching("frontend/src", &[], by_key);
    assert!(
        reads.is_empty(),
        "decode the answer as its tower_shared::api type instead: {reads:#?}"
    );
    // The check sees what it must, and not a slice of strings or a query's key.
    assert!(by_key(r#"let items = answer["items"].clone();"#));
    assert!(by_key(r#"list(&v["slo"], "windows")"#));
    assert!(by_key("let v: serde_json::Value = decode(&text)?;"));
    assert!(!by_key(r#"header_row(&["Window", "Availability"])"#));
    assert!(!by_key(r#"q.get("task")"#));
}

/// One clock: the backend reads the time only in `backend/src/clock.rs` (Tower's clock, and
/// the wall clock for other systems' stamps), the browser only in `frontend/src/clock.rs`.
#[test]
fn time_is_read_in_the_clock_modules_only() {
    let reads = |line: &str| {
        [
            "Utc::now",
            "Local::now",
            "SystemTime::now",
            "Date::now",
            "Date::new",
        ]
        .iter()
        .any(|p| line.contains(p))
    };
    for (dir, clock) in [
        ("backend/src", "backend/src/clock.rs"),
        ("frontend/src", "frontend/src/clock.rs"),
    ] {
        let found = lines_matching(dir, &[clock], reads);
        assert!(
            found.is_empty(),
            "read the time through {clock}: {found:#?}"
        );
    }
}

/// Every world a test starts begins at the pinned instant (`support::test_start`), never at
/// the machine's clock, so no test passes only at some hours: no test file reads the clock
/// but `support::wall_now` (for what Tower checks against the wall, a token's `exp`), and
/// that is never a world's start.
#[test]
fn test_worlds_start_at_the_pinned_instant() {
    let reads = |line: &str| {
        ["Utc::now", "Local::now", "SystemTime::now"]
            .iter()
            .any(|p| line.contains(p))
    };
    let found = lines_matching(
        "tests/it",
        &["tests/it/support.rs", "tests/it/tidy.rs"],
        reads,
    );
    assert!(
        found.is_empty(),
        "start worlds at support::test_start(): {found:#?}"
    );
    let support = std::fs::read_to_string(root().join("tests/it/support.rs")).unwrap();
    let support_reads: Vec<&str> = support
        .lines()
        .filter(|l| reads(l))
        .map(str::trim)
        .collect();
    assert_eq!(
        support_reads,
        ["chrono::Utc::now()"],
        "only wall_now reads the clock"
    );
    let wall_starts = lines_matching("tests/it", &["tests/it/tidy.rs"], |line| {
        line.contains("wall_now")
            && ["start", "SteadyFleet::new", "Snapshot::empty", "Clock::new"]
                .iter()
                .any(|w| line.contains(w))
    });
    assert!(
        wall_starts.is_empty(),
        "a world starts at support::test_start(): {wall_starts:#?}"
    );
}

/// The documentation's proxy examples trust the proxy's own addresses, never a network a
/// reader would copy and so trust every caller on it.
#[test]
fn proxy_examples_trust_exact_addresses() {
    let mut examples = Vec::new();
    let config = std::fs::read_to_string(root().join("backend/src/config.rs")).expect("config.rs");
    let mut texts = vec![(
        "backend/src/config.rs".to_owned(),
        non_test_code(&config).to_owned(),
    )];
    for doc in [
        "README.md",
        "ARCHITECTURE.md",
        "docs/embedding.md",
        "docs/permissions.md",
    ] {
        texts.push((
            doc.to_owned(),
            std::fs::read_to_string(root().join(doc)).expect(doc),
        ));
    }
    for (file, text) in &texts {
        for line in text.lines() {
            let Some((_, list)) = line.split_once("trustedAddresses: [") else {
                continue;
            };
            let list = list.split(']').next().unwrap_or_default();
            for address in list.split(',').map(str::trim) {
                examples.push(format!("{file}: {address}"));
                let exact = match address.split_once('/') {
                    None => address.parse::<std::net::IpAddr>().is_ok(),
                    Some((ip, bits)) => {
                        let ip = ip.parse::<std::net::IpAddr>();
                        matches!(
                            (ip, bits),
                            (Ok(std::net::IpAddr::V4(_)), "32")
                                | (Ok(std::net::IpAddr::V6(_)), "128")
                        )
                    }
                };
                assert!(exact, "{file} trusts a network in its example: {line}");
            }
        }
    }
    assert!(examples.len() >= 3, "no proxy example found: {examples:?}");
}

/// `shared`'s modules, each with the modules it names (`crate::<module>` outside tests and
/// comments). A folder module (`provisioning/`) is one module.
fn shared_imports() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let src = root().join("shared/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut imports: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("under shared/src");
        let first = relative.components().next().expect("a path");
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if module == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("reading a source file");
        let named = imports.entry(module.clone()).or_default();
        for line in non_test_code(&text)
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
        {
            named.extend(crate_paths(line).into_iter().filter(|m| *m != module));
        }
    }
    let modules: std::collections::BTreeSet<String> = imports.keys().cloned().collect();
    for named in imports.values_mut() {
        named.retain(|m| modules.contains(m));
    }
    imports
}

/// The modules a line names as `crate::<module>` or inside `crate::{a, b::c}`.
fn crate_paths(line: &str) -> Vec<String> {
    let word = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (at, _) in line.match_indices("crate::") {
        let rest = &line[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The group's own items: a `,` at depth 0 starts the next one.
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        out.push(word(&group[i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.push(word(rest));
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

/// A circle of imports among `modules`, as the modules in it, if there is one.
fn a_circle(
    imports: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Option<Vec<String>> {
    // Depth-first, keeping the path: a module met again on the path closes a circle.
    fn visit<'a>(
        module: &'a str,
        imports: &'a std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut std::collections::BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| *m == module) {
            return Some(path[at..].iter().map(|m| (*m).to_owned()).collect());
        }
        if !done.insert(module) {
            return None;
        }
        path.push(module);
        for next in imports.get(module).into_iter().flatten() {
            if let Some(circle) = visit(next, imports, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    let mut done = std::collections::BTreeSet::new();
    imports
        .keys()
        .find_map(|m| visit(m, imports, &mut Vec::new(), &mut done))
}

/// `shared` is built in floors: the platform's and the tools' vocabulary (`kube`, `image`,
/// `argo`, `tekton`, `github`, `cicd`, `hangar`) at the bottom, derivations above, `api` on
/// top; no module imports one that imports it back, however far round.
#[test]
fn shareds_modules_import_each_other_without_a_circle() {
    let imports = shared_imports();
    assert!(imports.len() > 20, "read only {:?}", imports.keys());
    assert_eq!(a_circle(&imports), None, "imports: {imports:#?}");
    for ground in ["kube", "image", "argo", "github", "time"] {
        let above: Vec<&String> = imports[ground]
            .iter()
            .filter(|m| !["kube", "image", "time"].contains(&m.as_str()))
            .collect();
        assert!(
            above.is_empty(),
            "{ground} is ground floor, yet imports {above:?}"
        );
    }
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let imports = [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &[])]
        .into_iter()
        .map(|(m, named)| {
            (
                m.to_owned(),
                named.iter().map(|n| (*n).to_owned()).collect(),
            )
        })
        .collect();
    assert_eq!(
        a_circle(&imports),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
    assert_eq!(
        crate_paths("use crate::{argo::{self, word}, kube::Object}; crate::image::tag(x)"),
        ["argo", "kube", "image"]
    );
}

/// One reader of image references (`shared::image`): nowhere else splits an image at `:`
/// (a registry's port read as a tag was a bug more than once).
#[test]
fn image_references_are_read_by_shared_image_only() {
    let splits = |line: &str| {
        ["rsplit(':')", "rsplit_once(':')", "split(':')"]
            .iter()
            .any(|p| line.contains(p))
            && (line.contains("image") || line.contains("tag"))
    };
    let mut found = lines_matching("shared/src", &["image.rs"], splits);
    found.extend(lines_matching("frontend/src", &[], splits));
    found.extend(lines_matching("backend/src", &[], splits));
    found.extend(lines_matching("tests/it", &["tidy.rs"], splits));
    assert!(
        found.is_empty(),
        "read images with tower_shared::image: {found:#?}"
    );
}

/// The modules `file` declares (`mod x;` / `pub mod x;` at the top level) that its module map
/// (the `//!` comment) does not name as [`x`].
fn unmapped_modules(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(file)).expect("reading a crate root");
    let map: String = text
        .lines()
        .filter(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))
                .and_then(|rest| rest.strip_suffix(';'))
        })
        .filter(|module| !map.contains(&format!("[`{module}`]")))
        .map(str::to_owned)
        .collect()
}

/// Every crate's and folder's module map names each module it declares, so a stranger finds
/// every room from the door.
#[test]
fn module_maps_name_every_module() {
    let roots = [
        "shared/src/lib.rs",
        "backend/src/lib.rs",
        "backend/src/routes/mod.rs",
        "backend/src/live/mod.rs",
        "frontend/src/main.rs",
        "frontend/src/tabs/mod.rs",
        "crates/hangar-sim/src/lib.rs",
        "crates/hangar-sim/src/stories/mod.rs",
        "crates/xtask/src/main.rs",
        "tests/it/main.rs",
        "tests/it/browser/mod.rs",
        "tests/it/routes/mod.rs",
    ];
    let unmapped: Vec<(&str, Vec<String>)> = roots
        .iter()
        .map(|file| (*file, unmapped_modules(file)))
        .filter(|(_, missing)| !missing.is_empty())
        .collect();
    assert!(
        unmapped.is_empty(),
        "modules missing from their module maps: {unmapped:#?}"
    );
}

/// Every invariant ARCHITECTURE.md states names a test that checks it, and every test it
/// names exists (`module::test`, or `module::file::test` for a folder module).
#[test]
fn every_invariant_in_architecture_md_names_a_test_that_exists() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let section = text
        .split("## Invariants")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("ARCHITECTURE.md has an Invariants section");
    let bullets: Vec<String> = section
        .split("\n- ")
        .skip(1)
        .map(|b| b.split("\n\n").next().unwrap_or(b).to_owned())
        .collect();
    assert!(
        bullets.len() >= 10,
        "read only {} invariants",
        bullets.len()
    );
    let tests = root().join("tests/it");
    let mut unnamed = Vec::new();
    let mut missing = Vec::new();
    for bullet in &bullets {
        let named: Vec<&str> = bullet
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|quoted| {
                let first = quoted.split("::").next().unwrap_or_default();
                tests.join(format!("{first}.rs")).exists() || tests.join(first).is_dir()
            })
            .collect();
        if named.is_empty() {
            unnamed.push(bullet.lines().next().unwrap_or_default().to_owned());
        }
        for path in named {
            let parts: Vec<&str> = path.split("::").collect();
            let file = match parts.as_slice() {
                [module] => tests.join(format!("{module}.rs")),
                [module, _] => tests.join(format!("{module}.rs")),
                [module, file, _] => tests.join(module).join(format!("{file}.rs")),
                _ => tests.join("none"),
            };
            let found = parts.len() == 1
                || std::fs::read_to_string(&file)
                    .is_ok_and(|code| code.contains(&format!("fn {}(", parts[parts.len() - 1])));
            if !found {
                missing.push(path.to_owned());
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "invariants naming no test: {unnamed:#?}"
    );
    assert!(
        missing.is_empty(),
        "tests ARCHITECTURE.md names that do not exist: {missing:#?}"
    );
}
