//! Release records on the Releases tab: the list (20 a page, by risk and sign-off), one
//! record's page with its working, its downloads, and the form for the part only people
//! write — validated here by the same `tower_shared::records::validate` the backend runs.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use tower_shared::api::{NotesAnswer, NotesRequest, RecordAnswer};
use tower_shared::records::{HumanNotes, Record, RecordFilter, RecordsPage, Risk};

use crate::api::{self, ApiError};
use crate::nav::record_href;

fn when(at: Option<DateTime<Utc>>) -> String {
    at.map_or_else(
        || "not known".to_owned(),
        |t| t.format("%Y-%m-%d %H:%M UTC").to_string(),
    )
}

/// The records list under the matrix.
#[component]
pub fn RecordsPanel(service: String) -> impl IntoView {
    let page = RwSignal::new(1usize);
    let risk = RwSignal::new(None::<Risk>);
    let signed = RwSignal::new(None::<bool>);
    let svc = service.clone();
    let answer = crate::feed::decoded::<tower_shared::records::RecordsPage>(
        crate::feed::text_resource(move || {
            let filter = RecordFilter {
                risk: risk.get(),
                signed_off: signed.get(),
            };
            api::records(svc.clone(), page.get(), filter)
        }),
    );
    let on_risk = move |ev| {
        risk.set(Risk::parse(&event_target_value(&ev)));
        page.set(1);
    };
    let on_signed = move |ev| {
        signed.set(match event_target_value(&ev).as_str() {
            "yes" => Some(true),
            "no" => Some(false),
            _ => None,
        });
        page.set(1);
    };
    let body = move || match answer() {
        None => view! { <p class="state loading">"Reading the records in Git…"</p> }.into_any(),
        Some(Err(err)) => crate::ui::error_alert(&err),
        Some(Ok(list)) => list_view(&service, list, page).into_any(),
    };
    view! {
        <section class="records" aria-labelledby="records-heading">
            <h3 id="records-heading">"Release records"</h3>
            <p class="filters">
                <label>"Risk "
                    <select class="risk-filter" on:change=on_risk>
                        <option value="">"any"</option>
                        <option value="low">"low"</option>
                        <option value="medium">"medium"</option>
                        <option value="high">"high"</option>
                    </select>
                </label>
                <label>" Signed off "
                    <select class="signed-filter" on:change=on_signed>
                        <option value="">"either"</option>
                        <option value="yes">"yes"</option>
                        <option value="no">"no"</option>
                    </select>
                </label>
            </p>
            {body}
        </section>
    }
}

fn list_view(service: &str, list: RecordsPage, page: RwSignal<usize>) -> impl IntoView {
    let sentence = match list.total {
        0 => "No release record yet: Tower writes one when a release is fully live in prod."
            .to_owned(),
        1 => "One release record.".to_owned(),
        n => format!("{n} release records, newest in prod first."),
    };
    let rows = list
        .rows
        .iter()
        .map(|row| {
            let proposed = row.proposed.clone().map(|pr| {
                view! {
                    <a href=pr.url.unwrap_or_default() target="_blank" rel="noopener">
                        {format!("proposed in PR #{}", pr.number)}
                    </a>
                }
            });
            view! {
                <tr data-record=row.release.clone()>
                    <th scope="row"><a href=record_href(service, &row.release)>{row.release.clone()}</a></th>
                    <td>{when(row.prod_at)}</td>
                    <td>{format!("{:.1}", row.score)}</td>
                    <td>{row.risk.map_or("not written", Risk::as_str)}</td>
                    <td>{row.signed_off.as_ref().map_or_else(|| "no".to_owned(), |s| format!("by {}", s.by))}</td>
                    <td>{proposed.map_or_else(|| view! { <span>"merged"</span> }.into_any(), IntoAny::into_any)}</td>
                </tr>
            }
        })
        .collect_view();
    let (at, pages) = (list.page, list.pages);
    let (first, last) = (at <= 1, at >= pages);
    view! {
        <p class="headline">{sentence}</p>
        <table class="records-list">
            <thead><tr>
                <th scope="col">"Release"</th><th scope="col">"In prod"</th><th scope="col">"Score"</th>
                <th scope="col">"Risk"</th><th scope="col">"Signed off"</th><th scope="col">"In Git"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
        <p class="pager">
            <button type="button" disabled=first on:click=move |_| page.update(|p| *p = p.saturating_sub(1).max(1))>"Newer"</button>
            {format!(" Page {at} of {pages} ")}
            <button type="button" disabled=last on:click=move |_| page.update(|p| *p += 1)>"Older"</button>
        </p>
    }
}

/// One record's page: `?view=releases&service=…&record=<release>`.
#[component]
pub fn RecordPage(service: String, release: String) -> impl IntoView {
    let (svc, rel) = (service.clone(), release.clone());
    let refetch = RwSignal::new(0u32);
    let answer = crate::feed::decoded::<tower_shared::api::RecordAnswer>(
        crate::feed::text_resource(move || {
            refetch.track();
            api::record(svc.clone(), rel.clone())
        }),
    );
    view! {
        <p><a href=crate::nav::tab_href(crate::nav::Tab::Releases, &service, None)>"← All releases"</a></p>
        {move || match answer() {
            None => view! { <p class="state loading">"Reading the record in Git…"</p> }.into_any(),
            Some(Err(err)) => crate::ui::error_alert(&err),
            Some(Ok(answer)) => record_view(answer).into_any(),
        }}
    }
}

fn factor_rows(record: &Record) -> impl IntoView {
    record
        .confidence
        .factors
        .iter()
        .map(|f| {
            view! {
                <tr>
                    <th scope="row">{f.name.clone()}</th><td>{f.read.clone()}</td>
                    <td>{format!("{:.2}", f.value)}</td><td>{f.weight}</td><td>{format!("{:.1}", f.points)}</td>
                </tr>
            }
        })
        .collect_view()
}

fn record_view(answer: RecordAnswer) -> impl IntoView {
    let record = answer.record.clone();
    let where_ = match &answer.proposed {
        Some(pr) => view! {
            <p class="state">"Not merged yet: "
                <a href=pr.url.clone().unwrap_or_default() target="_blank" rel="noopener">{format!("review PR #{}", pr.number)}</a>
                ". Its human part can be written once it is merged."
            </p>
        }
        .into_any(),
        None => view! { <p class="tag">{format!("{} in {}", answer.path, answer.repo)}</p> }.into_any(),
    };
    let headline = format!(
        "{} reached prod {}; its confidence score is {:.1} of 100.",
        record.release,
        when(record.prod_at()),
        record.confidence.score
    );
    let pulls = match &record.pulls {
        None => view! { <p>"Not known: Tower could not compare this release with the one before it in prod."</p> }.into_any(),
        Some(pulls) if pulls.is_empty() => view! { <p>"None merged since the release before it in prod."</p> }.into_any(),
        Some(pulls) => {
            let items = pulls
                .iter()
                .map(|p| {
                    let reviewers = p.reviewers.as_ref().map_or_else(
                        || "reviews not read".to_owned(),
                        |r| if r.is_empty() { "no review".to_owned() } else { format!("reviewed by {}", r.join(", ")) },
                    );
                    view! {
                        <li>
                            {crate::ui::link_or_text(p.url.clone(), format!("#{} {}", p.number, p.title))}
                            {format!(" — by {}, {reviewers}", p.author.as_deref().unwrap_or("someone"))}
                        </li>
                    }
                })
                .collect_view();
            view! { <ul class="record-pulls">{items}</ul> }.into_any()
        }
    };
    let transitions = record
        .transitions
        .iter()
        .map(|t| {
            view! {
                <tr><th scope="row">{t.environment.clone()}</th><td>{when(t.arrived_at)}</td>
                    <td>{t.after_seconds.map_or_else(|| "not known".to_owned(), tower_shared::time::compact_duration)}</td></tr>
            }
        })
        .collect_view();
    let gates = record
        .gates
        .iter()
        .map(|g| {
            let verdict = match g.passed {
                Some(true) => "✔ passed",
                Some(false) => "✖ failed",
                None => "not known",
            };
            view! { <tr><th scope="row">{g.name.clone()}</th><td>{verdict}</td><td>{g.detail.clone()}</td></tr> }
        })
        .collect_view();
    let evidence = record.evidence.as_ref().map_or_else(
        || "None found: no signature, provenance, SBOM or transparency log entry read for this image.".to_owned(),
        |e| e.summary.clone(),
    );
    let notes = answer.notes.clone();
    let human = match &record.human {
        Some(h) => view! {
            <dl class="human">
                <dt>"Summary"</dt><dd>{h.summary.clone()}</dd>
                <dt>"Risk"</dt><dd>{h.risk.as_str()}</dd>
                <dt>"How it was checked"</dt><dd>{h.checked.clone()}</dd>
                <dt>"Signed off"</dt><dd>{h.signed_off.as_ref().map_or_else(|| "not yet".to_owned(), |s| format!("by {} at {}", s.by, when(Some(s.at))))}</dd>
            </dl>
        }
        .into_any(),
        None => view! { <p>"Not written yet."</p> }.into_any(),
    };
    let form = answer
        .seen
        .clone()
        .map(|seen| view! { <NotesForm answer=answer.clone() seen=seen /> });
    let open_notes = (!notes.is_empty()).then(|| {
        let links = notes
            .iter()
            .map(|pr| view! { <a href=pr.url.clone().unwrap_or_default() target="_blank" rel="noopener">{format!("PR #{} ", pr.number)}</a> })
            .collect_view();
        view! { <p class="state">"Proposed and waiting for review: " {links}</p> }
    });
    view! {
        <article class="record" data-release=record.release.clone()>
            <h3>{format!("Release record: {} {}", record.service, record.release)}</h3>
            <p class="headline">{headline}</p>
            {where_}
            <Downloads service=record.service.clone() release=record.release.clone() />
            <h4>"Pull requests that went in"</h4>
            {pulls}
            <h4>"Transitions"</h4>
            <table><thead><tr><th scope="col">"Environment"</th><th scope="col">"Arrived"</th><th scope="col">"After the step before"</th></tr></thead>
                <tbody>{transitions}</tbody></table>
            <h4>"Gates"</h4>
            <table><thead><tr><th scope="col">"Gate"</th><th scope="col">"Verdict"</th><th scope="col">"Detail"</th></tr></thead>
                <tbody>{gates}</tbody></table>
            <h4>"Evidence"</h4>
            <p>{evidence}</p>
            <h4 class="score">{format!("Confidence score: {:.1} of 100", record.confidence.score)}</h4>
            <p>"Each factor's value from 0 to 1 times its weight; the score is the sum of the points."</p>
            <table class="factors"><thead><tr><th scope="col">"Factor"</th><th scope="col">"What was read"</th><th scope="col">"Value"</th><th scope="col">"Weight"</th><th scope="col">"Points"</th></tr></thead>
                <tbody>{factor_rows(&record)}</tbody></table>
            <h4>"The human part"</h4>
            {human}
            {open_notes}
            {form}
        </article>
    }
}

/// The two downloads; each keeps a link to what was saved.
#[component]
fn Downloads(service: String, release: String) -> impl IntoView {
    let saved = RwSignal::new(Vec::<(String, String, usize)>::new());
    let failed = RwSignal::new(None::<ApiError>);
    let button = move |format: &'static str, label: &'static str| {
        let (service, release) = (service.clone(), release.clone());
        view! {
            <button type="button" class=format!("download-{format}") on:click=move |_| {
                let (service, release) = (service.clone(), release.clone());
                leptos::task::spawn_local(async move {
                    match api::export(&service, &release, format).await {
                        Ok((url, size)) => saved.update(|s| s.push((format!("{service}-{release}.{format}"), url, size))),
                        Err(err) => failed.set(Some(err)),
                    }
                });
            }>{label}</button>
        }
    };
    view! {
        <p class="downloads">
            {button("html", "Download HTML")} " " {button("pdf", "Download PDF")}
            {move || saved.get().into_iter().map(|(name, url, size)| view! {
                <a class="saved" href=url.clone() download=name.clone() data-bytes=size>
                    {format!(" Saved {name} ({:.1} KB)", size as f64 / 1024.0)}
                </a>
            }).collect_view()}
        </p>
        {move || failed.get().map(|err| crate::ui::error_alert(&err))}
    }
}

/// The human part's form: checked as typed by the shared rules, sent as a pull request.
#[component]
fn NotesForm(answer: RecordAnswer, seen: String) -> impl IntoView {
    let current = answer.record.human.clone();
    let summary = RwSignal::new(
        current
            .as_ref()
            .map(|h| h.summary.clone())
            .unwrap_or_default(),
    );
    let checked = RwSignal::new(
        current
            .as_ref()
            .map(|h| h.checked.clone())
            .unwrap_or_default(),
    );
    let risk = RwSignal::new(current.as_ref().map_or(Risk::Low, |h| h.risk));
    let sign = RwSignal::new(false);
    let me = answer.access.subject.clone();
    let tried = RwSignal::new(false);
    let sent = RwSignal::new(None::<Result<NotesAnswer, ApiError>>);
    let notes = move || HumanNotes {
        summary: summary.get(),
        risk: risk.get(),
        checked: checked.get(),
        sign_off: sign.get(),
    };
    let problems = move || tower_shared::records::validate(&notes());
    let said = move |field: &'static str| {
        move || {
            tried
                .get()
                .then(|| {
                    problems()
                        .into_iter()
                        .find(|p| p.field == field)
                        .map(|p| p.message)
                })
                .flatten()
                .map(|m| view! { <span class="field-error" role="alert">{m}</span> })
        }
    };
    let may = answer.access.may_promote;
    let why_not = answer.access.why_not.clone();
    let (service, release) = (answer.record.service.clone(), answer.record.release.clone());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        tried.set(true);
        if !problems().is_empty() {
            return;
        }
        let request = NotesRequest {
            service: service.clone(),
            release: release.clone(),
            human: notes(),
            seen: seen.clone(),
        };
        leptos::task::spawn_local(async move {
            sent.set(Some(api::notes(request).await));
        });
    };
    let result = move || {
        sent.get().map(|r| match r {
            Ok(a) => view! {
                <p role="status" class="notes-sent">{a.message.clone()} " "
                    <a href=a.pull.url.clone().unwrap_or_default() target="_blank" rel="noopener">{format!("Review PR #{}", a.pull.number)}</a>
                </p>
            }
            .into_any(),
            Err(err) => crate::ui::error_alert(&err),
        })
    };
    view! {
        <form class="notes" on:submit=submit aria-label="The human part">
            {why_not.map(|w| view! { <p class="why-not">{format!("You may not write it: {w}.")}</p> })}
            <p><label for="notes-summary">"Plain summary"</label><br />
                <textarea id="notes-summary" rows="3" prop:value=move || summary.get()
                    on:input=move |ev| summary.set(event_target_value(&ev))></textarea> {said("summary")}</p>
            <p><label for="notes-risk">"Risk "</label>
                <select id="notes-risk" on:change=move |ev| risk.set(Risk::parse(&event_target_value(&ev)).unwrap_or(Risk::Low))>
                    {Risk::ALL.into_iter().map(|r| view! { <option value=r.as_str() selected=move || risk.get() == r>{r.as_str()}</option> }).collect_view()}
                </select></p>
            <p><label for="notes-checked">"How it was checked"</label><br />
                <textarea id="notes-checked" rows="3" prop:value=move || checked.get()
                    on:input=move |ev| checked.set(event_target_value(&ev))></textarea> {said("checked")}</p>
            <p><label><input type="checkbox" id="notes-sign" prop:checked=move || sign.get()
                    on:change=move |ev| sign.set(event_target_checked(&ev)) />" Sign it off now, as "
                    <strong class="signer">{me}</strong></label></p>
            <p><button type="submit" class="propose-notes" disabled=!may>"Propose by pull request"</button></p>
            {result}
        </form>
    }
}
