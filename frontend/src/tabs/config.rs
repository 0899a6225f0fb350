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
//! The answers are decoded as `tower_shared::api::{ConfigAnswer, ConfigFile, ConfigChecked,
//! ConfigSaved}`.

use leptos::prelude::*;
use tower_shared::api::{ConfigAnswer, ConfigChecked, ConfigDraft, ConfigFile};
use tower_shared::config::{Composed, SecretSync};
use tower_shared::time::{age, compact_duration};
use tower_shared::values::{Edit, Field, FieldKind, FileKind, Form};

use crate::api::{self, ApiError};
use crate::tabs::Tab;

/// The tab: the file picker and editor, then what the platform made.
#[component]
pub fn ConfigTab(service: String) -> impl IntoView {
    let query = crate::nav::use_query();
    let file = RwSignal::new(
        query
            .with_untracked(|q| q.get("file"))
            .unwrap_or_else(|| "env:prod".to_owned()),
    );
    let now = crate::feed::feed().now;
    let made = crate::tabs::fetched(Tab::Config, service.clone(), move |answer: ConfigAnswer| {
        let options = answer
            .environments
            .iter()
            .map(|e| format!("env:{e}"))
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
                {secrets(answer.made.secrets, now)}
                <h3>"Composed resources"</h3>
                {composed(answer.made.composed.as_ref())}
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
    loaded: RwSignal<Option<Result<ConfigFile, ApiError>>>,
    text: RwSignal<String>,
    checked: RwSignal<Option<Result<ConfigChecked, ApiError>>>,
    /// Answers come back in any order: only the newest check counts.
    asked: StoredValue<u32>,
}

impl Draft {
    fn file(&self) -> Option<ConfigFile> {
        self.loaded.get().and_then(Result::ok)
    }

    fn request(&self, edits: Vec<Edit>) -> Option<ConfigDraft> {
        let file = self.loaded.get_untracked()?.ok()?;
        Some(ConfigDraft {
            service: file.service,
            file: file.file.id,
            base: file.text,
            text: self.text.get_untracked(),
            edits,
            seen: file.seen,
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
                self.text.set(checked.text.clone());
            }
            self.checked.set(Some(answer));
        });
    }

    /// The form as last checked (or loaded).
    fn form(&self) -> Form {
        match (self.checked.get(), self.loaded.get()) {
            (Some(Ok(checked)), _) => checked.form,
            (_, Some(Ok(file))) => file.form,
            _ => Form::default(),
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
                    draft.text.set(loaded.text.clone());
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
        form.with(|f| f.fields.iter().map(|x| x.path.clone()).collect::<Vec<_>>())
    });
    let rows = move || {
        paths.with(|_| ());
        let (fields, maps) = form.with_untracked(|f| (f.fields.clone(), f.open_maps.clone()));
        let maps = maps
            .into_iter()
            .map(|m| view! { <AddEntry map=m.path label=m.label draft=draft /> });
        fields
            .into_iter()
            .map(|field| view! { <FieldRow field=field draft=draft form=form /> }.into_any())
            .chain(maps.map(IntoAny::into_any))
            .collect_view()
    };
    let checked = move || draft.checked.get().and_then(Result::ok);
    let unchanged = move || checked().is_none_or(|c| c.unchanged);
    let problems = move || form.with(|f| f.problems.clone());
    let save = move |_| {
        let Some(request) = draft.request(Vec::new()) else {
            return;
        };
        let svc = service.clone();
        saved.set(Some(Ok("Opening the pull request…".to_owned())));
        leptos::task::spawn_local(async move {
            let answer = api::config_save(&request).await;
            let ok = answer.is_ok();
            saved.set(Some(answer.map(|s| s.message).map_err(|e| e.to_string())));
            if ok {
                load(svc, file.get_untracked());
            }
        });
    };
    let head = move || {
        draft.loaded.get().map(|answer| match answer {
            Err(err) => crate::ui::error_alert(&err),
            Ok(f) => {
                let pulls = &f.pulls;
                let links = pulls.iter().map(|p| view! {
                    <li><a href=p.url.clone().unwrap_or_default() target="_blank" rel="noopener">{format!("#{} {}", p.number, p.title)}</a></li>
                }).collect_view();
                let from = match (&f.pull, &f.seen) {
                    (Some(p), _) => format!("from pull request #{} (a save adds to it)", p.number),
                    (None, None) => "not there yet: a save proposes this starter".to_owned(),
                    (None, Some(_)) => "from main".to_owned(),
                };
                let kind = FileKind::schema_id(f.file.kind);
                view! {
                    <p class="file-source">{format!("{} in {}, {from}. Checked against {kind}.", f.file.path, f.file.repo)}</p>
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
            .filter(|p| p.path.is_empty())
            .map(|p| p.message.clone())
            .collect();
        let count = all.len();
        view! {
            {whole.into_iter().map(|m| view! { <p role="alert" class="status-failed">{m}</p> }).collect_view()}
            {(count != 0).then(|| view! { <p class="why-not">{format!("Fix {count} problem(s) before saving.")}</p> })}
        }
    };
    let changes = move || match draft.checked.get() {
        Some(Ok(c)) if !c.unchanged => {
            let lines = c.diff.into_iter().map(|l| (l.change, l.text)).collect();
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
                    {move || match draft.file().and_then(|f| f.pull).map(|p| p.number) {
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
fn FieldRow(field: Field, draft: Draft, form: Memo<Form>) -> impl IntoView {
    let path = field.path.clone();
    let id = format!("field{}", path.replace('/', "-"));
    let problem_id = format!("{id}-problem");
    let p = path.clone();
    let problem = Memo::new(move |_| {
        form.with(|f| {
            f.problems
                .iter()
                .find(|x| x.path == p)
                .map(|x| x.message.clone())
        })
    });
    let p = path.clone();
    let value = move || {
        form.with(|f| {
            f.fields
                .iter()
                .find(|x| x.path == p)
                .and_then(|x| x.value.clone())
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
    let (input_type, step, min, max) = match &field.kind {
        FieldKind::Integer { minimum, maximum } => ("number", Some("1"), *minimum, *maximum),
        FieldKind::Number => ("number", Some("any"), None, None),
        _ => ("text", None, None, None),
    };
    let input = match &field.kind {
        FieldKind::Yaml => view! { <code id=id.clone()>{value}</code> }.into_any(),
        FieldKind::Choice { options } => {
            let options = options
                .iter()
                .map(|o| {
                    let value = o.clone();
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
            <input id=id.clone() type=input_type step=step min=min max=max
                prop:value=value aria-invalid=invalid aria-describedby=problem_id.clone()
                on:input=move |ev| edit(event_target_value(&ev)) />
        }
        .into_any(),
    };
    let note = match (&field.kind, field.known) {
        (FieldKind::Yaml, false) => {
            Some("not in the schema: kept as it is; change it in the YAML view")
        }
        (FieldKind::Yaml, true) => Some("change it in the YAML view"),
        _ => None,
    };
    let required = field.required.then_some(" *");
    let help = field.help.clone().map(|h| view! { <small>{h}</small> });
    view! {
        <div class="field" data-path=path>
            <label for=id>{field.label.clone()}{required}</label>
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
fn secrets(secrets: Vec<SecretSync>, now: ReadSignal<chrono::DateTime<chrono::Utc>>) -> AnyView {
    if secrets.is_empty() {
        return view! { <p class="state">"Tower sees no ExternalSecret or InfisicalSecret for this app."</p> }.into_any();
    }
    let rows = secrets
        .into_iter()
        .map(|s| {
            let (class, words) = match (s.ready, s.stale) {
                (Some(false), _) => {
                    let why = s.message.as_deref().or(s.reason.as_deref()).unwrap_or("no reason given");
                    ("status-failed", format!("✖ Not synced: {why}"))
                }
                (_, true) => ("status-attention", "⚠ Stale".to_owned()),
                (Some(true), false) => ("status-ok", "✔ In sync".to_owned()),
                (None, false) => ("status-unknown", "? Not reported yet".to_owned()),
            };
            let every = match s.refresh_interval_sec {
                None => "interval unknown".to_owned(),
                Some(0) => "never refreshes".to_owned(),
                Some(i) => format!("every {}", compact_duration(i)),
            };
            let last = s.last_refresh;
            let env = s.environment.clone().unwrap_or_default();
            let shown = s.environment.clone().unwrap_or_else(|| "CI/CD".to_owned());
            let keys = s.keys.join(", ");
            let store = s.store.as_ref().map(|x| format!(" from {x}")).unwrap_or_default();
            view! {
                <tr class=class data-secret=s.name.clone() data-env=env>
                    <td>{shown}</td>
                    <td>{format!("{} {}", s.kind, s.name)}<small>{store}</small></td>
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

fn yes_no(state: Option<bool>) -> &'static str {
    match state {
        Some(true) => "✔ yes",
        Some(false) => "✖ no",
        None => "unknown",
    }
}

/// The XR and what it composes.
fn composed(c: Option<&Composed>) -> AnyView {
    let Some(c) = c else {
        return view! { <p class="state">"Tower sees no Crossplane XR for this app."</p> }
            .into_any();
    };
    let rows = c
        .resources
        .iter()
        .map(|r| {
            let failing = r.ready == Some(false) || r.synced == Some(false);
            let name = match &r.link {
                Some(href) => view! { <a href=href.clone() target="_blank" rel="noopener">{r.name.clone()}</a> }.into_any(),
                None => view! { <span>{r.name.clone()}</span> }.into_any(),
            };
            let said = r
                .error
                .clone()
                .or_else(|| r.external_name.as_ref().map(|n| format!("external name {n}")))
                .unwrap_or_default();
            view! {
                <tr class=if failing { "status-failed" } else { "" } data-kind=r.kind.clone()>
                    <td>{r.kind.clone()}</td>
                    <td>{name}</td>
                    <td>{yes_no(r.ready)}</td>
                    <td>{yes_no(r.synced)}</td>
                    <td>{said}</td>
                </tr>
            }
        })
        .collect_view();
    let error = c
        .error
        .as_ref()
        .map(|e| format!(" — {e}"))
        .unwrap_or_default();
    view! {
        <p class="xr">{format!("{} {}: ready {}, synced {}{error}", c.kind, c.name, yes_no(c.ready), yes_no(c.synced))}</p>
        <table class="composed">
            {crate::ui::header_row(&["Kind", "Name", "Ready", "Synced", "Error or external name"])}
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}
