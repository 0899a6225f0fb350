//! One simulated cluster's objects: the desired world goes in, versioned watch events come out.
//!
//! Every change gets the next resource version (a counter, as etcd's revision). The last
//! [`HISTORY`] events are kept so watches can resume from a recent version; asking for an
//! older one gets `410 Gone`, exactly as a compacted API server answers.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::resources::{self, ResourceType};

/// How many events a cluster remembers for resuming watches.
pub const HISTORY: usize = 20_000;

/// Where an object lives: its type, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub group: &'static str,
    pub plural: &'static str,
    pub namespace: Option<String>,
    pub name: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// A change, as a watch reports it.
#[derive(Clone, Debug)]
pub struct Event {
    pub resource_version: u64,
    pub kind: EventType,
    pub key: Key,
    pub object: Value,
}

#[derive(Debug)]
struct State {
    objects: BTreeMap<Key, Value>,
    /// The resource version of the last change.
    revision: u64,
    history: VecDeque<Arc<Event>>,
    /// The oldest resource version a watch may still resume from.
    oldest_resumable: u64,
    /// Live watches listen here; replaced (closing them) by a compaction.
    events: broadcast::Sender<Arc<Event>>,
}

/// A watch resumed from a resource version: what happened since, and what is to come.
#[derive(Debug)]
pub struct Resume {
    pub past: Vec<Arc<Event>>,
    pub receiver: broadcast::Receiver<Arc<Event>>,
}

/// A cluster's store, shared by its API server and the world that drives it.
#[derive(Clone, Debug)]
pub struct Store {
    state: Arc<Mutex<State>>,
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

impl Store {
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                objects: BTreeMap::new(),
                revision: 1,
                history: VecDeque::new(),
                oldest_resumable: 1,
                events: broadcast::channel(4096).0,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a panic elsewhere; the map itself is still consistent.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes the cluster hold exactly `desired` (objects of unknown kinds are skipped),
    /// stamping new objects with a uid and `creationTimestamp` (`now` unless given) and every
    /// change with the next resource version. Returns how many objects changed.
    pub fn apply(&self, desired: Vec<Value>, now: DateTime<Utc>) -> usize {
        let mut wanted: BTreeMap<Key, Value> = BTreeMap::new();
        for object in desired {
            if let Some(key) = key_of(&object) {
                wanted.insert(key, object);
            }
        }
        let mut state = self.lock();
        let gone: Vec<(Key, Option<Value>)> = state
            .objects
            .keys()
            .filter(|k| !wanted.contains_key(*k))
            .map(|k| (k.clone(), None))
            .collect();
        let changes = wanted.into_iter().map(|(k, v)| (k, Some(v))).chain(gone);
        Self::change(&mut state, changes, now)
    }

    /// Brings the objects at `keys` to what each says: `Some` to hold that object, `None`
    /// to hold none; every other object stays as it is. Stamps and counts as
    /// [`Store::apply`] does.
    pub fn apply_keys(
        &self,
        keys: impl IntoIterator<Item = (Key, Option<Value>)>,
        now: DateTime<Utc>,
    ) -> usize {
        let mut state = self.lock();
        Self::change(&mut state, keys, now)
    }

    fn change(
        state: &mut State,
        keys: impl IntoIterator<Item = (Key, Option<Value>)>,
        now: DateTime<Utc>,
    ) -> usize {
        let mut changes = Vec::new();
        for (key, wanted) in keys {
            let current = state.objects.get(&key);
            match (current, wanted) {
                (None, None) => {}
                (Some(current), None) => {
                    changes.push((EventType::Deleted, key, current.clone()));
                }
                (Some(current), Some(object)) if same_content(current, &object) => {}
                (current, Some(mut object)) => {
                    let metadata = &mut object["metadata"];
                    let (uid, created) = match current {
                        Some(c) => (
                            c["metadata"]["uid"].clone(),
                            c["metadata"]["creationTimestamp"].clone(),
                        ),
                        None => (
                            json!(uid_for(&key)),
                            json!(now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                        ),
                    };
                    if metadata.get("uid").is_none() {
                        metadata["uid"] = uid;
                    }
                    if metadata.get("creationTimestamp").is_none() {
                        metadata["creationTimestamp"] = created;
                    }
                    let kind = if current.is_some() {
                        EventType::Modified
                    } else {
                        EventType::Added
                    };
                    changes.push((kind, key, object));
                }
            }
        }
        let count = changes.len();
        for (kind, key, mut object) in changes {
            state.revision += 1;
            let rv = state.revision;
            object["metadata"]["resourceVersion"] = json!(rv.to_string());
            if kind == EventType::Deleted {
                state.objects.remove(&key);
            } else {
                state.objects.insert(key.clone(), object.clone());
            }
            let event = Arc::new(Event {
                resource_version: rv,
                kind,
                key,
                object,
            });
            state.history.push_back(Arc::clone(&event));
            if state.history.len() > HISTORY {
                if let Some(dropped) = state.history.pop_front() {
                    state.oldest_resumable = dropped.resource_version;
                }
            }
            // No receiver is fine: nobody is watching.
            let _ = state.events.send(event);
        }
        count
    }

    /// Compacts: forgets the event history, moves the revision on, and ends every open
    /// watch. Clients resuming from any version they have seen get `410 Gone` and must list
    /// again (lists then report the new revision, which watches can resume from).
    pub fn compact(&self) {
        let mut state = self.lock();
        state.revision += 1;
        state.history.clear();
        state.oldest_resumable = state.revision;
        state.events = broadcast::channel(4096).0;
    }

    /// The current resource version and the objects of `resource`, sorted by namespace and
    /// name, optionally in one namespace.
    pub fn list(&self, resource: &ResourceType, namespace: Option<&str>) -> (u64, Vec<Value>) {
        let (revision, items, _) = self.list_page(resource, namespace, |_| true, 0, None);
        (revision, items)
    }

    /// One page of [`Store::list`]'s objects that `keep` accepts: from the `start`th, at most
    /// `limit`; with the current resource version and how many there are in all. Only the
    /// page is copied, so listing a large type page by page is not quadratic.
    pub fn list_page(
        &self,
        resource: &ResourceType,
        namespace: Option<&str>,
        keep: impl Fn(&Value) -> bool,
        start: usize,
        limit: Option<usize>,
    ) -> (u64, Vec<Value>, usize) {
        let state = self.lock();
        let first = Key {
            group: resource.group,
            plural: resource.plural,
            namespace: None,
            name: String::new(),
        };
        let mut page = Vec::new();
        let mut total = 0;
        let of_type = state
            .objects
            .range(first..)
            .take_while(|(k, _)| k.group == resource.group && k.plural == resource.plural)
            .filter(|(k, _)| namespace.is_none() || k.namespace.as_deref() == namespace)
            .filter(|(_, v)| keep(v));
        for (_, object) in of_type {
            if total >= start && limit.is_none_or(|l| page.len() < l) {
                page.push(object.clone());
            }
            total += 1;
        }
        (state.revision, page, total)
    }

    /// Every object, of every type.
    pub fn objects(&self) -> Vec<Value> {
        self.lock().objects.values().cloned().collect()
    }

    /// Every event still in the history, oldest first.
    pub fn history(&self) -> Vec<Arc<Event>> {
        self.lock().history.iter().cloned().collect()
    }

    pub fn get(&self, key: &Key) -> Option<Value> {
        self.lock().objects.get(key).cloned()
    }

    pub fn revision(&self) -> u64 {
        self.lock().revision
    }

    /// Events after `resource_version` and a receiver for the ones to come, taken together so
    /// nothing falls between them; `None` when that version is older than the history kept.
    pub fn watch_from(&self, resource_version: u64) -> Option<Resume> {
        let state = self.lock();
        if resource_version < state.oldest_resumable {
            return None;
        }
        let past = state
            .history
            .iter()
            .filter(|e| e.resource_version > resource_version)
            .cloned()
            .collect();
        Some(Resume {
            past,
            receiver: state.events.subscribe(),
        })
    }

    /// Every current object (for `watch` without a resource version) and a receiver.
    pub fn watch_all(&self) -> (u64, Vec<(Key, Value)>, broadcast::Receiver<Arc<Event>>) {
        let state = self.lock();
        let objects = state
            .objects
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        (state.revision, objects, state.events.subscribe())
    }
}

/// Objects are equal for the store when they differ at most in server-set metadata.
fn same_content(current: &Value, desired: &Value) -> bool {
    // What the store stamps itself; a story's object never says otherwise.
    const STAMPED: [&str; 3] = ["resourceVersion", "uid", "creationTimestamp"];
    /// Equal maps, but for the keys `skip` rejects (compared in place: no copies).
    fn equal_but(
        a: &serde_json::Map<String, Value>,
        b: &serde_json::Map<String, Value>,
        skip: impl Fn(&str) -> bool,
    ) -> bool {
        let kept = |m: &serde_json::Map<String, Value>| m.keys().filter(|k| !skip(k)).count();
        kept(a) == kept(b)
            && a.iter()
                .filter(|(k, _)| !skip(k))
                .all(|(k, v)| b.get(k) == Some(v))
    }
    match (current.as_object(), desired.as_object()) {
        (Some(a), Some(b)) => {
            let metadata_equal = match (
                a.get("metadata").and_then(Value::as_object),
                b.get("metadata").and_then(Value::as_object),
            ) {
                (Some(x), Some(y)) => equal_but(x, y, |k| STAMPED.contains(&k)),
                _ => a.get("metadata") == b.get("metadata"),
            };
            metadata_equal && equal_but(a, b, |k| k == "metadata")
        }
        _ => current == desired,
    }
}

/// The key of an object, if the simulator serves its kind.
pub fn key_of(object: &Value) -> Option<Key> {
    let resource = resources::by_kind(object["apiVersion"].as_str()?, object["kind"].as_str()?)?;
    let name = object["metadata"]["name"].as_str()?.to_owned();
    let namespace = object["metadata"]["namespace"].as_str().map(str::to_owned);
    Some(Key {
        group: resource.group,
        plural: resource.plural,
        namespace: if resource.namespaced { namespace } else { None },
        name,
    })
}

/// A stable uid for a key, so a replayed world gets the same uids.
fn uid_for(key: &Key) -> String {
    uid_of(&format!(
        "{}/{}/{}/{}",
        key.group,
        key.plural,
        key.namespace.as_deref().unwrap_or(""),
        key.name
    ))
}

/// A stable UUID-shaped id for `text` (the same text always gets the same id).
pub fn uid_of(text: &str) -> String {
    // FNV-1a, twice with different seeds, laid out as a UUID.
    let fnv = |seed: u64| {
        text.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    };
    let (a, b) = (fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4));
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, phase: &str) -> Value {
        json!({"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
               "metadata": {"name": name, "namespace": "ci"}, "status": {"phase": phase}})
    }

    fn pipelineruns() -> &'static ResourceType {
        resources::by_plural("tekton.dev", "v1", "pipelineruns").unwrap()
    }

    #[test]
    fn apply_diffs_into_versioned_events() {
        let store = Store::new();
        let now = "2026-11-30T10:00:00Z".parse().unwrap();
        assert_eq!(store.apply(vec![run("a", "1"), run("b", "1")], now), 2);
        let start = store.revision();
        assert_eq!(
            store.apply(vec![run("a", "1"), run("b", "1")], now),
            0,
            "unchanged world, no events"
        );
        assert_eq!(
            store.apply(vec![run("a", "2")], now),
            2,
            "a modified, b deleted"
        );
        let past = store.watch_from(start).unwrap().past;
        let kinds: Vec<_> = past.iter().map(|e| (e.kind, e.key.name.as_str())).collect();
        assert_eq!(
            kinds,
            [(EventType::Modified, "a"), (EventType::Deleted, "b")]
        );
        let (rv, items) = store.list(pipelineruns(), Some("ci"));
        assert_eq!(rv, store.revision());
        assert_eq!(items.len(), 1);
        // An object carries the version of its own last change, the list the latest of all.
        assert_eq!(
            items[0]["metadata"]["resourceVersion"],
            past[0].resource_version.to_string()
        );
        assert!(past[0].resource_version < rv);
        assert!(items[0]["metadata"]["uid"].is_string());
    }

    #[test]
    fn compaction_makes_old_versions_gone() {
        let store = Store::new();
        let now = "2026-11-30T10:00:00Z".parse().unwrap();
        store.apply(vec![run("a", "1")], now);
        let old = store.revision();
        store.apply(vec![run("a", "2")], now);
        let latest = store.revision();
        store.compact();
        assert!(store.watch_from(old).is_none());
        assert!(
            store.watch_from(latest).is_none(),
            "even the newest version seen before"
        );
        assert!(store.watch_from(store.revision()).is_some());
    }
}
