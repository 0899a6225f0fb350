//! Kubernetes label and field selectors, as list and watch requests send them.

use serde_json::Value;

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed selector: every requirement must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

/// A selector the server cannot read; answered with 400.
#[derive(Debug, thiserror::Error)]
#[error("unable to parse requirement {0:?}")]
pub struct SelectorError(pub String);

/// Splits on commas that are not inside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn set(values: &str) -> Option<Vec<String>> {
    let inner = values.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(inner.split(',').map(|v| v.trim().to_owned()).collect())
}

impl Selector {
    /// Parses `app=shop,tier in (web,api),!legacy`. Empty text selects everything.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for part in split_top_level(text)
            .into_iter()
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let bad = || SelectorError(part.to_owned());
            let requirement = if let Some((key, value)) = part.split_once("!=") {
                Requirement::NotEquals(key.trim().to_owned(), value.trim().to_owned())
            } else if let Some((key, value)) =
                part.split_once("==").or_else(|| part.split_once('='))
            {
                Requirement::Equals(key.trim().to_owned(), value.trim().to_owned())
            } else if let Some((key, values)) = part.split_once(" notin ") {
                Requirement::NotIn(key.trim().to_owned(), set(values).ok_or_else(bad)?)
            } else if let Some((key, values)) = part.split_once(" in ") {
                Requirement::In(key.trim().to_owned(), set(values).ok_or_else(bad)?)
            } else if let Some(key) = part.strip_prefix('!') {
                Requirement::NotExists(key.trim().to_owned())
            } else if part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
            {
                Requirement::Exists(part.to_owned())
            } else {
                return Err(bad());
            };
            requirements.push(requirement);
        }
        Ok(Self(requirements))
    }

    /// Whether `lookup` (key → value) satisfies every requirement.
    pub fn matches<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => lookup(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => lookup(k) != Some(v.as_str()),
            Requirement::In(k, vs) => lookup(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::NotIn(k, vs) => lookup(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Requirement::Exists(k) => lookup(k).is_some(),
            Requirement::NotExists(k) => lookup(k).is_none(),
        })
    }

    /// Label selector against an object's `metadata.labels`.
    pub fn matches_labels(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        self.matches(|k| labels.get(k).and_then(Value::as_str))
    }

    /// Field selector: `metadata.name` and `metadata.namespace` (what CRDs support).
    pub fn matches_fields(&self, object: &Value) -> bool {
        self.matches(|k| match k {
            "metadata.name" => object["metadata"]["name"].as_str(),
            "metadata.namespace" => object["metadata"]["namespace"].as_str(),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        let o = json!({"metadata": {"name": "a", "namespace": "ci",
            "labels": {"app": "shop", "tier": "web", "tekton.dev/pipeline": "build"}}});
        let yes = [
            "",
            "app=shop",
            "app==shop,tier in (web,api)",
            "tier notin (db)",
            "tekton.dev/pipeline",
            "!legacy",
            "app!=ledger",
        ];
        for s in yes {
            assert!(Selector::parse(s).unwrap().matches_labels(&o), "{s}");
        }
        let no = [
            "app=ledger",
            "tier in (api)",
            "tier notin (web,db)",
            "legacy",
            "!app",
            "app=shop,tier=db",
        ];
        for s in no {
            assert!(!Selector::parse(s).unwrap().matches_labels(&o), "{s}");
        }
        assert!(Selector::parse("app=shop,(broken").is_err());
    }

    #[test]
    fn field_selectors() {
        let o = json!({"metadata": {"name": "a", "namespace": "ci"}});
        assert!(Selector::parse("metadata.name=a")
            .unwrap()
            .matches_fields(&o));
        assert!(Selector::parse("metadata.namespace!=prod")
            .unwrap()
            .matches_fields(&o));
        assert!(!Selector::parse("metadata.name=b")
            .unwrap()
            .matches_fields(&o));
    }
}
