//! The Config tab: the app's config files as forms that open reviewed pull requests, and
//! what the platform made for it.
//!
//! A file (`GET /api/config/file`) is edited as the form its schema makes, with the YAML
//! beside it for what the form cannot express. Every change goes to the backend
//! (`POST /api/config/check`), which writes it into the YAML keeping comments and order,
//! and answers the form again with its problems and the diff: the browser reads no YAML and
//! validates nothing itself, so what it flags is what the save would refuse. Saving opens a
//! pull request (`POST /api/config/save`) — or adds to Tower's open one for the file.
//!
//! Below, read only and followed live (`GET /api/config`): the app's secrets (ready, stale,
//! last refresh; names and keys, never values) and the resources its XR composes.
//!
//! The answers are `tower_shared::api::{ConfigAnswer, ConfigFile, ConfigChecked,
//! ConfigSaved}`, read here as JSON trees (one reader for all of them, not one per type: the
//! bundle's budget).

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use serde_json::Value as Json;
use tower_shared::api::ConfigDraft;
use tower_shared::time::{age, compact_duration};
use tower_shared::values::Edit;
use tower_shared::values::LineChange;

use crate::api::{self, ApiError};
use crate::tabs::Tab;

/// `v[key]` as text ("" when absent).
pub(crate) fn text(v: &Json, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_owned()
}

/// `v[key]`'s items (none when absent).
pub(crate) fn list(v: &Json, key: &str) -> Vec<Json> {
    v[key].as_array().cloned().unwrap_or_default()
}

/// The tab: the file picker and editor, then what the platform made.
#[component]
pub fn ConfigTab(service: String) -> impl IntoView {
    let query = use_query_map();
    let file = RwSignal::new(
        query
            .with_untracked(|q| q.get("file"))
            .unwrap_or_else(|| "env:prod".to_owned()),
    );
    let now = crate::feed::feed().now;
    let made = crate::tabs::fetched(Tab::Config, service.clone(), move |answer: Json| {
        let options = list(&answer, "environments")
            .iter()
            .filter_map(|e| e.as_str().map(|e| format!("env:{e}")))
            .chain(["cicd".to_owned()])
            .map(|id| {
                let label = id
                    .strip_prefix("env:")
                    .map_or_else(|| "cicd.yaml".to_owned(), |env| format!("{env} values"));
                let selected = file.get_untracked() == id;
                view! { <option value=id selected=selected>{label}</option> }
            })
            .collect_view();
        view! {
            <label class="picker">"File "
                <select on:change=move |ev| file.set(event_target_value(&ev))>{options}</select>
            </label>
            <section class="made" aria-label="What the platform made">
                <h3>"Secrets"</h3>
                {secrets(list(&answer, "secrets"), now)}
                <h3>"Composed resources"</h3>
                {composed(&answer["composed"])}
            </section>
        }
        .into_any()
    });
    view! {
        <crate::ui::SharedHealthNotice />
        <Editor service=service file=file />
        {made}
    }
}

/// The loaded file, its draft and the backend's last word on it.
#[derive(Clone, Copy)]
struct Draft {
    loaded: RwSignal<Option<Result<Json, ApiError>>>,
    text: RwSignal<String>,
    checked: RwSignal<Option<Result<Json, ApiError>>>,
    /// Answers come back in any order: only the newest check counts.
    asked: StoredValue<u32>,
}

impl Draft {
    fn file(&self) -> Option<Json> {
        self.loaded.get().and_then(Result::ok)
    }

    fn request(&self, edits: Vec<Edit>) -> Option<ConfigDraft> {
        let file = self.loaded.get_untracked()?.ok()?;
        Some(ConfigDraft {
            service: text(&file, "service"),
            file: text(&file["file"], "id"),
            base: text(&file, "text"),
            text: self.text.get_untracked(),
            edits,
            seen: file["seen"].as_str().map(str::to_owned),
        })
    }

    /// Asks the backend to write `edits` into the draft and check it.
    fn check(self, edits: Vec<Edit>) {
        let Some(request) = self.request(edits) else {
            return;
        };
        self.asked.update_value(|n| *n += 1);
        let mine = self.asked.get_value();
        leptos::task::spawn_local(async move {
            let answer = api::config_check(&request).await;
            if self.asked.get_value() != mine {
                return;
            }
            if let Ok(checked) = &answer {
                self.text.set(text(checked, "text"));
            }
            self.checked.set(Some(answer));
        });
    }

    /// The form as last checked (or loaded).
    fn form(&self) -> Json {
        match (self.checked.get(), self.loaded.get()) {
            (Some(Ok(checked)), _) => checked["form"].clone(),
            (_, Some(Ok(file))) => file["form"].clone(),
            _ => Json::Null,
        }
    }
}

/// The picked file as a form, its YAML, its diff and the save button.
#[component]
fn Editor(service: String, file: RwSignal<String>) -> impl IntoView {
    let draft = Draft {
        loaded: RwSignal::new(None),
        text: RwSignal::new(String::new()),
        checked: RwSignal::new(None),
        asked: StoredValue::new(0),
    };
    let saved = RwSignal::new(None::<Result<String, String>>);
    let access = crate::tabs::access_of(&service);
    let load = move |service: String, id: String| {
        leptos::task::spawn_local(async move {
            let answer = api::config_file(service, id.clone()).await;
            if file.get_untracked() == id {
                if let Ok(loaded) = &answer {
                    draft.text.set(text(loaded, "text"));
                }
                draft.checked.set(None);
                draft.loaded.set(Some(answer));
            }
        });
    };
    let svc = service.clone();
    Effect::new(move |_| {
        draft.loaded.set(None);
        saved.set(None);
        load(svc.clone(), file.get());
    });
    let form = Memo::new(move |_| draft.form());
    // The fields' places: rows are drawn again only when a field comes or goes, so the one
    // being typed in keeps its focus while its value and problem follow the backend.
    let paths = Memo::new(move |_| {
        form.with(|f| {
            list(f, "fields")
                .iter()
                .map(|x| text(x, "path"))
                .collect::<Vec<_>>()
        })
    });
    let rows = move || {
        paths.with(|_| ());
        let fields = form.with_untracked(|f| list(f, "fields"));
        let maps = form.with_untracked(|f| list(f, "openMaps"));
        let maps = maps.into_iter().map(
            |m| view! { <AddEntry map=text(&m, "path") label=text(&m, "label") draft=draft /> },
        );
        fields
            .into_iter()
            .map(|field| view! { <FieldRow field=field draft=draft form=form /> }.into_any())
            .chain(maps.map(IntoAny::into_any))
            .collect_view()
    };
    let checked = move || draft.checked.get().and_then(Result::ok);
    let unchanged = move || checked().is_none_or(|c| c["unchanged"] != false);
    let problems = move || form.with(|f| list(f, "problems"));
    let save = move |_| {
        let Some(request) = draft.request(Vec::new()) else {
            return;
        };
        let svc = service.clone();
        saved.set(Some(Ok("Opening the pull request…".to_owned())));
        leptos::task::spawn_local(async move {
            let answer = api::config_save(&request).await;
            let ok = answer.is_ok();
            saved.set(Some(
                answer
                    .map(|s| text(&s, "message"))
                    .map_err(|e| e.to_string()),
            ));
            if ok {
                load(svc, file.get_untracked());
            }
        });
    };
    let head = move || {
        draft.loaded.get().map(|answer| match answer {
            Err(err) => crate::ui::error_alert(&err),
            Ok(f) => {
                let pulls = list(&f, "pulls");
                let links = pulls.iter().map(|p| view! {
                    <li><a href=text(p, "url") target="_blank" rel="noopener">{format!("#{} {}", p["number"].as_u64().unwrap_or_default(), text(p, "title"))}</a></li>
                }).collect_view();
                let from = match (&f["pull"], &f["seen"]) {
                    (Json::Object(p), _) => format!("from pull request #{} (a save adds to it)", p["number"].as_u64().unwrap_or_default()),
                    (_, Json::Null) => "not there yet: a save proposes this starter".to_owned(),
                    _ => "from main".to_owned(),
                };
                let kind = match text(&f["file"], "kind").as_str() {
                    "cicd" => "https://tower.hangar.io/schemas/cicd/v1",
                    _ => "https://tower.hangar.io/schemas/env-values/v1",
                };
                view! {
                    <p class="file-source">{format!("{} in {}, {from}. Checked against {kind}.", text(&f["file"], "path"), text(&f["file"], "repo"))}</p>
                    {(!pulls.is_empty()).then(|| view! { <h4>"Open config pull requests"</h4><ul class="config-pulls">{links}</ul> })}
                }
                .into_any()
            }
        })
    };
    let may = move || access.get().is_some_and(|a| a.may_promote);
    let others = move || {
        let all = problems();
        let whole: Vec<String> = all
            .iter()
            .filter(|p| text(p, "path").is_empty())
            .map(|p| text(p, "message"))
            .collect();
        let count = all.len();
        view! {
            {whole.into_iter().map(|m| view! { <p role="alert" class="status-failed">{m}</p> }).collect_view()}
            {(count != 0).then(|| view! { <p class="why-not">{format!("Fix {count} problem(s) before saving.")}</p> })}
        }
    };
    let changes = move || match draft.checked.get() {
        Some(Ok(c)) if c["unchanged"] == false => {
            let lines = list(&c, "diff")
                .iter()
                .map(|l| {
                    let change = match l["change"].as_str() {
                        Some("added") => LineChange::Added,
                        Some("removed") => LineChange::Removed,
                        _ => LineChange::Same,
                    };
                    (change, text(l, "text"))
                })
                .collect();
            Some(view! { <h4>"What the pull request changes"</h4>{crate::tabs::releases::diff_view(lines)} }.into_any())
        }
        Some(Err(err)) => Some(crate::ui::error_alert(&err)),
        _ => None,
    };
    view! {
        <section class="config-editor" aria-label="Edit a config file">
            {head}
            <div class="config-panes">
                <form class="config-form" aria-label="Values" on:submit=|ev| ev.prevent_default()>
                    {rows}
                </form>
                <label class="config-yaml">"YAML"
                    <textarea spellcheck="false" rows="18"
                        prop:value=move || draft.text.get()
                        on:input=move |ev| { draft.text.set(event_target_value(&ev)); draft.check(Vec::new()); }></textarea>
                </label>
            </div>
            {others}
            {changes}
            <p class="actions">
                <button type="button" class="save-config"
                    disabled=move || !may() || unchanged() || !problems().is_empty()
                    on:click=save>
                    {move || match draft.file().and_then(|f| f["pull"]["number"].as_u64()) {
                        Some(n) => format!("Add to pull request #{n}"),
                        None => "Open pull request".to_owned(),
                    }}
                </button>
                {crate::ui::why_not(access, "change this app's config")}
                {crate::ui::outcome_line("config-outcome", move || saved.get())}
            </p>
        </section>
    }
}

/// One field: its input as its kind says, its problem beside it.
#[component]
fn FieldRow(field: Json, draft: Draft, form: Memo<Json>) -> impl IntoView {
    let path = text(&field, "path");
    let id = format!("field{}", path.replace('/', "-"));
    let problem_id = format!("{id}-problem");
    let p = path.clone();
    let problem = Memo::new(move |_| {
        form.with(|f| {
            list(f, "problems")
                .iter()
                .find(|x| x["path"] == p.as_str())
                .map(|x| text(x, "message"))
        })
    });
    let p = path.clone();
    let value = move || {
        form.with(|f| {
            list(f, "fields")
                .iter()
                .find(|x| x["path"] == p.as_str())
                .map(|x| text(x, "value"))
                .unwrap_or_default()
        })
    };
    let p = path.clone();
    let edit = move |value: String| {
        draft.check(vec![Edit {
            path: p.clone(),
            value: (!value.is_empty()).then_some(value),
        }]);
    };
    let invalid = move || problem.with(Option::is_some).then_some("true");
    let kind = &field["kind"];
    let (input_type, step) = match kind["type"].as_str() {
        Some("integer") => ("number", Some("1")),
        Some("number") => ("number", Some("any")),
        _ => ("text", None),
    };
    let input = match kind["type"].as_str() {
        Some("yaml") => view! { <code id=id.clone()>{value}</code> }.into_any(),
        Some("choice") => {
            let options = list(kind, "options")
                .iter()
                .map(|o| {
                    let value = o.as_str().unwrap_or_default().to_owned();
                    let label = value.clone();
                    view! { <option value=value>{label}</option> }
                })
                .collect_view();
            view! {
                <select id=id.clone() prop:value=value aria-invalid=invalid aria-describedby=problem_id.clone()
                    on:change=move |ev| edit(event_target_value(&ev))>
                    <option value="">"(not set)"</option>{options}
                </select>
            }
            .into_any()
        }
        _ => view! {
            <input id=id.clone() type=input_type step=step min=kind["minimum"].as_i64() max=kind["maximum"].as_i64()
                prop:value=value aria-invalid=invalid aria-describedby=problem_id.clone()
                on:input=move |ev| edit(event_target_value(&ev)) />
        }
        .into_any(),
    };
    let note = match (kind["type"].as_str(), field["known"].as_bool()) {
        (Some("yaml"), Some(false)) => {
            Some("not in the schema: kept as it is; change it in the YAML view")
        }
        (Some("yaml"), _) => Some("change it in the YAML view"),
        _ => None,
    };
    let required = (field["required"] == true).then_some(" *");
    let help = field["help"]
        .as_str()
        .map(|h| view! { <small>{h.to_owned()}</small> });
    view! {
        <div class="field" data-path=path>
            <label for=id>{text(&field, "label")}{required}</label>
            {input}
            {help}
            {note.map(|n| view! { <small>{n}</small> })}
            <span id=problem_id class="problem" role="alert">{move || problem.get().unwrap_or_default()}</span>
        </div>
    }
}

/// A new entry of an open map (an environment variable): its name and value.
#[component]
fn AddEntry(map: String, label: String, draft: Draft) -> impl IntoView {
    let (name, value) = (RwSignal::new(String::new()), RwSignal::new(String::new()));
    let add = move |_| {
        let key = name.get_untracked();
        if key.is_empty() {
            return;
        }
        draft.check(vec![Edit {
            path: format!("{map}/{}", key.replace('~', "~0").replace('/', "~1")),
            value: Some(value.get_untracked()),
        }]);
        name.set(String::new());
        value.set(String::new());
    };
    view! {
        <fieldset class="add-entry">
            <legend>{format!("Add to {label}")}</legend>
            <input type="text" aria-label="Name" placeholder="NAME" prop:value=name on:input=move |ev| name.set(event_target_value(&ev)) />
            <input type="text" aria-label="Value" placeholder="value" prop:value=value on:input=move |ev| value.set(event_target_value(&ev)) />
            <button type="button" on:click=add>"Add"</button>
        </fieldset>
    }
}

/// The app's secrets: one row each, with its state in words.
fn secrets(secrets: Vec<Json>, now: ReadSignal<chrono::DateTime<chrono::Utc>>) -> AnyView {
    if secrets.is_empty() {
        return view! { <p class="state">"Tower sees no ExternalSecret or InfisicalSecret for this app."</p> }.into_any();
    }
    let rows = secrets
        .into_iter()
        .map(|s| {
            let (class, words) = match (s["ready"].as_bool(), s["stale"] == true) {
                (Some(false), _) => {
                    let why = s["message"].as_str().or(s["reason"].as_str()).unwrap_or("no reason given");
                    ("status-failed", format!("✖ Not synced: {why}"))
                }
                (_, true) => ("status-attention", "⚠ Stale".to_owned()),
                (Some(true), false) => ("status-ok", "✔ In sync".to_owned()),
                (None, false) => ("status-unknown", "? Not reported yet".to_owned()),
            };
            let every = match s["refreshIntervalSec"].as_i64() {
                None => "interval unknown".to_owned(),
                Some(0) => "never refreshes".to_owned(),
                Some(i) => format!("every {}", compact_duration(i)),
            };
            let last = s["lastRefresh"]
                .as_str()
                .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok());
            let env = text(&s, "environment");
            let shown = if env.is_empty() { "CI/CD".to_owned() } else { env.clone() };
            let keys = list(&s, "keys").iter().filter_map(|k| k.as_str().map(str::to_owned)).collect::<Vec<_>>().join(", ");
            let store = s["store"].as_str().map(|x| format!(" from {x}")).unwrap_or_default();
            view! {
                <tr class=class data-secret=text(&s, "name") data-env=env>
                    <td>{shown}</td>
                    <td>{format!("{} {}", text(&s, "kind"), text(&s, "name"))}<small>{store}</small></td>
                    <td>{keys}</td>
                    <td class="state">{words}</td>
                    <td>{move || last.map_or_else(|| "unknown".to_owned(), |t| age(t, now.get()))}{format!(" ({every})")}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="secrets">
            {crate::ui::header_row(&["Environment", "Secret", "Keys", "State", "Last refresh"])}
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}

fn yes_no(state: &Json) -> &'static str {
    match state.as_bool() {
        Some(true) => "✔ yes",
        Some(false) => "✖ no",
        None => "unknown",
    }
}

/// The XR and what it composes.
fn composed(c: &Json) -> AnyView {
    if !c.is_object() {
        return view! { <p class="state">"Tower sees no Crossplane XR for this app."</p> }
            .into_any();
    }
    let rows = list(c, "resources")
        .into_iter()
        .map(|r| {
            let failing = r["ready"] == false || r["synced"] == false;
            let name = match r["link"].as_str() {
                Some(href) => view! { <a href=href.to_owned() target="_blank" rel="noopener">{text(&r, "name")}</a> }.into_any(),
                None => view! { <span>{text(&r, "name")}</span> }.into_any(),
            };
            let said = r["error"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| r["externalName"].as_str().map(|n| format!("external name {n}")))
                .unwrap_or_default();
            view! {
                <tr class=if failing { "status-failed" } else { "" } data-kind=text(&r, "kind")>
                    <td>{text(&r, "kind")}</td>
                    <td>{name}</td>
                    <td>{yes_no(&r["ready"])}</td>
                    <td>{yes_no(&r["synced"])}</td>
                    <td>{said}</td>
                </tr>
            }
        })
        .collect_view();
    let error = c["error"]
        .as_str()
        .map(|e| format!(" — {e}"))
        .unwrap_or_default();
    view! {
        <p class="xr">{format!("{} {}: ready {}, synced {}{error}", text(c, "kind"), text(c, "name"), yes_no(&c["ready"]), yes_no(&c["synced"]))}</p>
        <table class="composed">
            {crate::ui::header_row(&["Kind", "Name", "Ready", "Synced", "Error or external name"])}
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}
