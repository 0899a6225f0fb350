//! The app's config files as forms: an environment's values (`glidepath/envs/<env>.yaml`)
//! and the pipeline's `cicd.yaml`, each described by a JSON Schema that ships with Tower
//! (`shared/schemas/*.json`, versioned by `$id`).
//!
//! - [`fields`] — the form a file's schema and text make: one [`Field`] per value the schema
//!   describes (with its current value), and one per key the schema does not know — kept,
//!   shown, never dropped.
//! - [`apply`] — the person's [`Edit`]s written into the YAML text by a lossless editor
//!   (`yaml-edit`): comments, key order, quoting and blank lines stay as they were; only the
//!   edited lines change.
//! - [`check`] — the schema's verdict as [`Problem`]s, each naming the field (a JSON pointer
//!   such as `/replicas`) and what is wrong. The backend runs it as the person types (the
//!   Config tab asks `POST /api/config/check`) and again before it opens a pull request, so
//!   both say the same path and message: one function, one answer.
//!
//! The text side needs the `yaml` feature (the backend); the wire types do not. The browser
//! reads no YAML and validates nothing itself — its bundle stays within budget, and the
//! answer it shows is the one the save would give.

use serde::{Deserialize, Serialize};

/// Which kind of config file, and so which schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    /// `glidepath/envs/<env>.yaml` in the app's GitOps repository.
    EnvValues,
    /// The app's `cicd.yaml`.
    Cicd,
}

impl FileKind {
    /// The schema's text (JSON Schema, draft 2020-12).
    pub fn schema(self) -> &'static str {
        match self {
            Self::EnvValues => include_str!("../schemas/env-values.v1.json"),
            Self::Cicd => include_str!("../schemas/cicd.v1.json"),
        }
    }

    /// The schema's `$id`: which version of it Tower checks against.
    pub fn schema_id(self) -> &'static str {
        match self {
            Self::EnvValues => "https://tower.hangar.io/schemas/env-values/v1",
            Self::Cicd => "https://tower.hangar.io/schemas/cicd/v1",
        }
    }
}

/// What a form field holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum FieldKind {
    Integer {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        minimum: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        maximum: Option<i64>,
    },
    Number,
    Text,
    Choice {
        options: Vec<String>,
    },
    Flag,
    /// A list, or anything else the form does not edit: changed in the YAML view.
    Yaml,
}

/// One field of the form.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Field {
    /// Where the value lives, as a JSON pointer (`/resources/cpu`, `/env/LOG_LEVEL`).
    pub path: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    pub kind: FieldKind,
    /// The value as the file has it (a scalar's text; YAML for the rest); `None`: not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default)]
    pub required: bool,
    /// `false`: a key the schema does not describe — kept as it is, shown, never dropped.
    pub known: bool,
    /// Set when this field is an entry of an open map (an environment variable): new
    /// entries go beside it as `<group>/<NAME>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// A change the person made in the form: the value at `path` becomes `value`
/// (`None` removes it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edit {
    pub path: String,
    #[serde(default)]
    pub value: Option<String>,
}

/// What is wrong with a file, and where: `path` is a JSON pointer (`""`: the whole file).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    pub path: String,
    pub message: String,
}

/// The groups of open maps the form offers "add" for: their pointer and their label.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenMap {
    pub path: String,
    pub label: String,
}

/// A file read as a form: the fields, the maps new entries may join, and the problems.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Form {
    pub fields: Vec<Field>,
    #[serde(default)]
    pub open_maps: Vec<OpenMap>,
    pub problems: Vec<Problem>,
}

/// The JSON pointer of `segments` (RFC 6901: `~` as `~0`, `/` as `~1`).
pub fn pointer<'a>(segments: impl IntoIterator<Item = &'a str>) -> String {
    segments
        .into_iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// The segments of a JSON pointer; `None` when it is not one (it must start with `/`).
pub fn segments(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

#[cfg(all(feature = "yaml", not(target_arch = "wasm32")))]
pub use text::{apply, check, diff, fields, form, ValuesError};

/// The text side: the backend's (not built for the browser, which reads no YAML).
#[cfg(all(feature = "yaml", not(target_arch = "wasm32")))]
mod text {
    use std::str::FromStr as _;
    use std::sync::OnceLock;

    use serde_json::Value;
    use yaml_edit::path::YamlPath as _;
    use yaml_edit::Document;

    use super::{
        pointer, segments, DiffLine, Edit, Field, FieldKind, FileKind, Form, LineChange, OpenMap,
        Problem,
    };

    /// An edit that cannot be written, naming the field.
    #[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
    #[error("{}: {}", .0.path, .0.message)]
    pub struct ValuesError(pub Problem);

    fn problem(path: &str, message: impl Into<String>) -> Problem {
        Problem {
            path: path.to_owned(),
            message: message.into(),
        }
    }

    fn schema(kind: FileKind) -> &'static Value {
        static ENV: OnceLock<Value> = OnceLock::new();
        static CICD: OnceLock<Value> = OnceLock::new();
        let cell = match kind {
            FileKind::EnvValues => &ENV,
            FileKind::Cicd => &CICD,
        };
        cell.get_or_init(|| {
            serde_json::from_str(kind.schema()).expect("the schemas Tower ships are JSON")
        })
    }

    /// The compiled schema of `kind` (compiled once).
    fn compiled(kind: FileKind) -> &'static (boon::Schemas, boon::SchemaIndex) {
        static ENV: OnceLock<(boon::Schemas, boon::SchemaIndex)> = OnceLock::new();
        static CICD: OnceLock<(boon::Schemas, boon::SchemaIndex)> = OnceLock::new();
        let cell = match kind {
            FileKind::EnvValues => &ENV,
            FileKind::Cicd => &CICD,
        };
        cell.get_or_init(|| {
            let mut schemas = boon::Schemas::new();
            let mut compiler = boon::Compiler::new();
            let url = kind.schema_id();
            compiler
                .add_resource(url, schema(kind).clone())
                .expect("the schemas Tower ships are JSON Schema");
            let index = compiler
                .compile(url, &mut schemas)
                .expect("the schemas Tower ships compile");
            (schemas, index)
        })
    }

    /// The schema node describing `path`'s value, following `properties` and
    /// `additionalProperties`.
    fn schema_at<'a>(root: &'a Value, path: &[String]) -> Option<&'a Value> {
        let mut node = root;
        for segment in path {
            node = node
                .get("properties")
                .and_then(|p| p.get(segment))
                .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))?;
        }
        Some(node)
    }

    /// The YAML text as JSON, or the problem with it.
    fn parse(text: &str) -> Result<Value, Problem> {
        if text.trim().is_empty() {
            return Ok(Value::Object(serde_json::Map::new()));
        }
        serde_yaml_ng::from_str::<Value>(text)
            .map_err(|err| problem("", format!("not YAML Tower can read: {err}")))
    }

    /// What the schema says of `text`, each problem with its field; sorted by path.
    pub fn check(kind: FileKind, text: &str) -> Vec<Problem> {
        let value = match parse(text) {
            Ok(value) => value,
            Err(problem) => return vec![problem],
        };
        let (schemas, index) = compiled(kind);
        let mut problems = Vec::new();
        if let Err(error) = schemas.validate(&value, *index) {
            collect(schema(kind), &error, &mut problems);
        }
        problems.sort();
        problems.dedup();
        problems
    }

    /// The problems under `error`, each where it is, in words a person reads.
    fn collect(root: &Value, error: &boon::ValidationError<'_, '_>, out: &mut Vec<Problem>) {
        use boon::ErrorKind as K;
        let path = error.instance_location.to_string();
        let help = || {
            segments(&path)
                .and_then(|s| schema_at(root, &s))
                .and_then(|s| s.get("description"))
                .and_then(Value::as_str)
        };
        let message = match &error.kind {
            // Wrappers: what is wrong is in their causes.
            K::Group | K::Schema { .. } | K::Reference { .. } | K::AllOf => {
                for cause in &error.causes {
                    collect(root, cause, out);
                }
                return;
            }
            K::PropertyName { prop } => {
                // boon leaves the location empty under propertyNames: the map is the one
                // the schema location names (`#/properties/env` is `/env`).
                let fragment = error.schema_url.split_once('#').map_or("", |(_, f)| f);
                let names: Vec<&str> = fragment
                    .split('/')
                    .collect::<Vec<_>>()
                    .windows(2)
                    .filter(|w| w[0] == "properties")
                    .map(|w| w[1])
                    .collect();
                let map = if path.is_empty() {
                    pointer(names)
                } else {
                    path.clone()
                };
                out.push(problem(
                    &format!("{map}{}", pointer([prop.as_str()])),
                    format!("{prop} is not a name this map takes: capitals, digits and _, not first a digit"),
                ));
                return;
            }
            K::AnyOf | K::OneOf(None) => match help() {
                Some(help) => format!("is none of the forms this takes. {help}"),
                None => "is none of the forms this takes".to_owned(),
            },
            K::Minimum { got, want } => format!("must be at least {want} (it is {got})"),
            K::Maximum { got, want } => format!("must be at most {want} (it is {got})"),
            K::MinLength { want, .. } => format!("must be at least {want} characters long"),
            K::MaxLength { want, got } => {
                format!("must be at most {want} characters long (it is {got})")
            }
            K::Pattern { got, .. } => match help() {
                Some(help) => format!("{got:?} is not in the expected form. {help}"),
                None => format!("{got:?} is not in the expected form"),
            },
            K::Enum { want } => format!(
                "must be one of {}",
                want.iter().map(shown).collect::<Vec<_>>().join(", ")
            ),
            K::Required { want } => format!("needs {}", want.join(", ")),
            K::Type { want, .. } => format!(
                "must be {}",
                want.iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            K::MinItems { want, .. } => format!("needs at least {want} entries"),
            other => other.to_string(),
        };
        out.push(problem(&path, message));
    }

    /// A scalar's text as the form shows it; YAML for the rest.
    fn shown(value: &Value) -> String {
        match value {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            Value::Bool(_) | Value::Number(_) => value.to_string(),
            other => serde_yaml_ng::to_string(other).unwrap_or_default(),
        }
    }

    fn kind_of(node: &Value) -> FieldKind {
        if let Some(options) = node.get("enum").and_then(Value::as_array) {
            return FieldKind::Choice {
                options: options.iter().map(shown).collect(),
            };
        }
        match node.get("type").and_then(Value::as_str) {
            Some("integer") => FieldKind::Integer {
                minimum: node.get("minimum").and_then(Value::as_i64),
                maximum: node.get("maximum").and_then(Value::as_i64),
            },
            Some("number") => FieldKind::Number,
            Some("boolean") => FieldKind::Flag,
            Some("string") => FieldKind::Text,
            _ => FieldKind::Yaml,
        }
    }

    fn text_of(node: &Value, key: &str) -> Option<String> {
        node.get(key).and_then(Value::as_str).map(str::to_owned)
    }

    /// Walks one mapping of the schema and the document together.
    fn walk(schema: &Value, doc: Option<&Value>, at: &mut Vec<String>, out: &mut Form) {
        let props = schema.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let doc_map = doc.and_then(Value::as_object);
        for (key, node) in props.into_iter().flatten() {
            at.push(key.clone());
            let value = doc_map.and_then(|m| m.get(key));
            let is_object = node.get("type").and_then(Value::as_str) == Some("object");
            if is_object && node.get("properties").is_some() {
                walk(node, value, at, out);
            } else if is_object
                && node
                    .get("additionalProperties")
                    .is_some_and(Value::is_object)
            {
                let label = text_of(node, "title").unwrap_or_else(|| key.clone());
                let group = pointer(at.iter().map(String::as_str));
                let entry = &node["additionalProperties"];
                for (name, v) in value.and_then(Value::as_object).into_iter().flatten() {
                    at.push(name.clone());
                    out.fields.push(Field {
                        path: pointer(at.iter().map(String::as_str)),
                        label: name.clone(),
                        help: None,
                        kind: kind_of(entry),
                        value: Some(shown(v)),
                        required: false,
                        known: true,
                        group: Some(group.clone()),
                    });
                    at.pop();
                }
                out.open_maps.push(OpenMap { path: group, label });
            } else {
                out.fields.push(Field {
                    path: pointer(at.iter().map(String::as_str)),
                    label: text_of(node, "title").unwrap_or_else(|| key.clone()),
                    help: text_of(node, "description"),
                    kind: kind_of(node),
                    value: value.map(shown),
                    required: required.contains(&key.as_str()),
                    known: true,
                    group: None,
                });
            }
            at.pop();
        }
        // What the schema does not describe: kept, shown, edited in the YAML view.
        let open = schema
            .get("additionalProperties")
            .is_some_and(Value::is_object);
        for (key, v) in doc_map.into_iter().flatten() {
            if open || props.is_some_and(|p| p.contains_key(key)) {
                continue;
            }
            at.push(key.clone());
            out.fields.push(Field {
                path: pointer(at.iter().map(String::as_str)),
                label: key.clone(),
                help: None,
                kind: FieldKind::Yaml,
                value: Some(shown(v)),
                required: false,
                known: false,
                group: None,
            });
            at.pop();
        }
    }

    /// The form of `text` under `kind`'s schema (no problems listed; see [`form`]).
    pub fn fields(kind: FileKind, text: &str) -> Form {
        let mut out = Form::default();
        let doc = parse(text).ok();
        walk(schema(kind), doc.as_ref(), &mut Vec::new(), &mut out);
        out
    }

    /// The form of `text` with the schema's problems.
    pub fn form(kind: FileKind, text: &str) -> Form {
        Form {
            problems: check(kind, text),
            ..fields(kind, text)
        }
    }

    /// yaml-edit's dotted path for pointer segments (dots, brackets and backslashes escaped;
    /// an all-digit key escaped so it stays a key).
    fn dotted(segments: &[String]) -> String {
        segments
            .iter()
            .map(|s| {
                let mut out = String::new();
                if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                    out.push('\\');
                }
                for c in s.chars() {
                    if matches!(c, '.' | '[' | ']' | '\\') {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out
            })
            .collect::<Vec<_>>()
            .join(".")
    }

    /// `edits` written into `text`; everything else (comments, order, quoting) as it was.
    /// A value is written as its field's type says (an integer field's `4` as a number, a
    /// text field's `true` as a quoted string).
    pub fn apply(kind: FileKind, text: &str, edits: &[Edit]) -> Result<String, ValuesError> {
        if edits.is_empty() {
            return Ok(text.to_owned());
        }
        let doc = if text.trim().is_empty() {
            Document::new()
        } else {
            Document::from_str(text).map_err(|err| {
                ValuesError(problem("", format!("not YAML Tower can edit: {err}")))
            })?
        };
        let root = schema(kind);
        for edit in edits {
            let bad = |message: String| ValuesError(problem(&edit.path, message));
            let segs = segments(&edit.path)
                .filter(|s| !s.is_empty() && s.iter().all(|x| !x.is_empty()))
                .ok_or_else(|| bad(format!("{:?} is not a field of this file", edit.path)))?;
            let path = dotted(&segs);
            let Some(value) = &edit.value else {
                // Removing what is not there leaves the file as it is.
                let _ = doc.try_remove_path(&path);
                continue;
            };
            let node = schema_at(root, &segs);
            let written = match node.map(kind_of) {
                Some(FieldKind::Integer { .. }) => match value.trim().parse::<i64>() {
                    Ok(n) => doc.try_set_path(&path, n),
                    Err(_) => doc.try_set_path(&path, value.as_str()),
                },
                Some(FieldKind::Number) => match value.trim().parse::<f64>() {
                    Ok(n) => doc.try_set_path(&path, n),
                    Err(_) => doc.try_set_path(&path, value.as_str()),
                },
                Some(FieldKind::Flag) => match value.trim() {
                    "true" => doc.try_set_path(&path, true),
                    "false" => doc.try_set_path(&path, false),
                    _ => doc.try_set_path(&path, value.as_str()),
                },
                Some(FieldKind::Yaml) | None => {
                    return Err(bad(
                        "the form does not edit this value: change it in the YAML view".to_owned(),
                    ))
                }
                Some(FieldKind::Text | FieldKind::Choice { .. }) => {
                    doc.try_set_path(&path, value.as_str())
                }
            };
            written.map_err(|err| bad(format!("cannot be written: {err}")))?;
        }
        Ok(doc.to_string())
    }

    /// Line by line, `before` against `after`.
    pub fn diff(before: &str, after: &str) -> Vec<DiffLine> {
        similar::TextDiff::from_lines(before, after)
            .iter_all_changes()
            .map(|change| DiffLine {
                change: match change.tag() {
                    similar::ChangeTag::Equal => LineChange::Same,
                    similar::ChangeTag::Delete => LineChange::Removed,
                    similar::ChangeTag::Insert => LineChange::Added,
                },
                text: change.value().trim_end_matches(['\r', '\n']).to_owned(),
            })
            .collect()
    }
}

#[cfg(all(test, feature = "yaml", not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    const PROD: &str = "\
# storefront in prod: Argo CD deploys what this file says.
image: ghcr.io/acme/storefront:1.2.0-abc1234
replicas: 3   # three zones
resources:
  cpu: 500m
  memory: 512Mi
env:
  # read by the payments client
  PAYMENTS_TIMEOUT_MS: \"2500\"
  LOG_FORMAT: json
owner-note: ask team-a before scaling down
";

    fn edit(path: &str, value: &str) -> Edit {
        Edit {
            path: path.to_owned(),
            value: Some(value.to_owned()),
        }
    }

    #[test]
    fn one_edit_changes_only_its_line_and_keeps_comments() {
        let after = apply(FileKind::EnvValues, PROD, &[edit("/replicas", "5")]).unwrap();
        let changed: Vec<_> = diff(PROD, &after)
            .into_iter()
            .filter(|l| l.change != LineChange::Same)
            .map(|l| (l.change, l.text))
            .collect();
        assert_eq!(
            changed,
            vec![
                (
                    LineChange::Removed,
                    "replicas: 3   # three zones".to_owned()
                ),
                (LineChange::Added, "replicas: 5   # three zones".to_owned()),
            ]
        );
    }

    #[test]
    fn an_env_var_is_written_as_a_string_and_a_new_one_joins_its_map() {
        let after = apply(
            FileKind::EnvValues,
            PROD,
            &[edit("/env/LOG_FORMAT", "true"), edit("/env/NEW_FLAG", "on")],
        )
        .unwrap();
        let read: serde_json::Value = serde_yaml_ng::from_str(&after).unwrap();
        assert_eq!(read["env"]["LOG_FORMAT"], "true", "{after}");
        assert_eq!(read["env"]["NEW_FLAG"], "on", "{after}");
        assert!(after.contains("# read by the payments client"), "{after}");
        assert_eq!(read["owner-note"], "ask team-a before scaling down");
        assert!(check(FileKind::EnvValues, &after).is_empty());
    }

    #[test]
    fn problems_name_the_field_and_say_what_is_wrong() {
        let after = apply(
            FileKind::EnvValues,
            PROD,
            &[edit("/replicas", "0"), edit("/resources/memory", "lots")],
        )
        .unwrap();
        let problems = check(FileKind::EnvValues, &after);
        let paths: Vec<_> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            vec!["/replicas", "/resources/memory"],
            "{problems:?}"
        );
        assert_eq!(problems[0].message, "must be at least 1 (it is 0)");
        assert!(problems[1].message.contains("256Mi"), "{problems:?}");
        let bad_name = apply(FileKind::EnvValues, PROD, &[edit("/env/lower", "x")]).unwrap();
        let named = check(FileKind::EnvValues, &bad_name);
        assert_eq!(named[0].path, "/env/lower", "{named:?}");
        assert_eq!(check(FileKind::EnvValues, "image: [")[0].path, "");
    }

    #[test]
    fn the_form_has_a_field_per_described_value_and_keeps_unknown_keys() {
        let form = fields(FileKind::EnvValues, PROD);
        let at = |p: &str| form.fields.iter().find(|f| f.path == p).unwrap();
        assert_eq!(at("/replicas").value.as_deref(), Some("3"));
        assert_eq!(
            at("/replicas").kind,
            FieldKind::Integer {
                minimum: Some(1),
                maximum: Some(50)
            }
        );
        assert_eq!(at("/resources/cpu").value.as_deref(), Some("500m"));
        assert_eq!(at("/logLevel").value, None);
        assert_eq!(
            at("/env/PAYMENTS_TIMEOUT_MS").group.as_deref(),
            Some("/env")
        );
        let unknown = at("/owner-note");
        assert!(!unknown.known);
        assert_eq!(unknown.kind, FieldKind::Yaml);
        assert_eq!(form.open_maps[0].path, "/env");
    }

    #[test]
    fn the_form_refuses_what_it_cannot_write() {
        let err = apply(FileKind::EnvValues, PROD, &[edit("/owner-note", "x")]).unwrap_err();
        assert_eq!(err.0.path, "/owner-note");
        let err = apply(FileKind::Cicd, "stages: [build]\n", &[edit("/stages", "x")]).unwrap_err();
        assert_eq!(err.0.path, "/stages");
        let err = apply(FileKind::EnvValues, PROD, &[edit("replicas", "2")]).unwrap_err();
        assert_eq!(err.0.path, "replicas");
    }

    #[test]
    fn pointers_escape_and_read_back() {
        let p = pointer(["a/b", "c~d"]);
        assert_eq!(p, "/a~1b/c~0d");
        assert_eq!(segments(&p).unwrap(), vec!["a/b", "c~d"]);
        assert_eq!(segments("nope"), None);
    }
}

/// One line of a file's diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffLine {
    pub change: LineChange,
    /// The line without its end.
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LineChange {
    Same,
    Removed,
    Added,
}
