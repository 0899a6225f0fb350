//! The Deployments tab, Kubernetes variant: per environment, the canary in plain words, its
//! ramp, the traffic split and each analysis metric as drawings (SVG drawn here from the
//! derived tab, no chart library), and Argo CD's sync, health and revision — with Argo CD's
//! own actions, for who may act on the app: sync and force sync (`POST /api/argocd/sync`),
//! and beside a canary the Rollout actions Argo CD offers on it now (`GET
//! /api/argocd/rollout-actions`), each button saying what it will do.

use leptos::prelude::*;
use tower_shared::api::{
    Access, ArgoSyncAnswer, ArgoSyncRequest, RolloutActionAnswer, RolloutActionRequest,
};
use tower_shared::deployments::{Environment, Metric, RolloutView, StepKind, StepStatus};
use tower_shared::evidence::{Evidence, Signing, Transparency};

/// The tab for a service running on Kubernetes: one card per environment, in promotion order.
/// `&env=NAME` picks one: it is marked, and on a narrow screen it is the only card shown;
/// the picker links to each.
/// What the Argo CD actions need, held by the page (outside the tab, which is redrawn as the
/// platform moves): the caller's access, the last answers by environment, the action whose
/// second press confirms it (`<env>` for a force sync, `<env>/<action>` for a canary's),
/// and whether a canary action is under way (its buttons wait).
#[derive(Clone, Copy, Debug)]
pub struct ArgoActions {
    pub access: Signal<Option<Access>>,
    pub answer: RwSignal<Option<(String, Result<ArgoSyncAnswer, crate::api::ApiError>)>>,
    pub confirming: RwSignal<Option<String>>,
    acted: RwSignal<Option<(String, Result<RolloutActionAnswer, crate::api::ApiError>)>>,
    busy: RwSignal<bool>,
}

impl ArgoActions {
    pub fn new(access: Signal<Option<Access>>) -> Self {
        Self {
            access,
            answer: RwSignal::new(None),
            confirming: RwSignal::new(None),
            acted: RwSignal::new(None),
            busy: RwSignal::new(false),
        }
    }

    fn run(self, request: RolloutActionRequest) {
        self.confirming.set(None);
        self.busy.set(true);
        leptos::task::spawn_local(async move {
            let environment = request.environment.clone();
            let answer = crate::api::rollout_action(request).await;
            self.acted.set(Some((environment, answer)));
            self.busy.set(false);
        });
    }

    /// A canary's actions as Argo CD offers them now, asked for when the card is drawn (so
    /// each redraw, as the rollout moves, offers what applies to its new state). An action
    /// that skips the canary's safety or undoes it asks once more before it goes.
    fn canary_view(self, service: &str, environment: &str) -> impl IntoView {
        let offered = RwSignal::new(None);
        let (s, e) = (service.to_owned(), environment.to_owned());
        leptos::task::spawn_local(async move {
            offered.set(Some(crate::api::rollout_actions(s, e).await));
        });
        let may = move || self.access.get().is_some_and(|a| a.may_promote) && !self.busy.get();
        let (service, env, env2) = (
            service.to_owned(),
            environment.to_owned(),
            environment.to_owned(),
        );
        let buttons = move || {
            match offered.get() {
            None => ().into_any(),
            Some(Err(err)) => {
                format!("Argo CD's actions on this rollout are unknown: {err}").into_any()
            }
            Some(Ok(answer)) => answer
                .actions
                .into_iter()
                .map(|offer| {
                    let key = format!("{env}/{}", offer.action.as_str());
                    let confirming = {
                        let key = key.clone();
                        move || self.confirming.get().as_ref() == Some(&key)
                    };
                    let request = RolloutActionRequest {
                        service: service.clone(),
                        environment: env.clone(),
                        action: offer.action,
                        seen: answer.seen.clone(),
                    };
                    let (label, confirm) = (offer.label, offer.confirm);
                    let second = confirm.is_some();
                    let click = {
                        let confirming = confirming.clone();
                        move |_| {
                            if second && !confirming() {
                                self.confirming.set(Some(key.clone()));
                            } else {
                                self.run(request.clone());
                            }
                        }
                    };
                    let text = move || match (&confirm, confirming()) {
                        (Some(confirm), true) => confirm.clone(),
                        _ => label.clone(),
                    };
                    view! {
                        <button type="button" class="canary-action" data-action=offer.action.as_str()
                            disabled=move || !may() on:click=click>{text}</button>
                    }
                })
                .collect_view()
                .into_any(),
        }
        };
        let said = move || {
            self.acted
                .get()
                .filter(|(e, _)| *e == env2)
                .map(|(_, result)| {
                    result
                        .map(|a| a.message)
                        .map_err(|e| format!("Not done: {e}"))
                })
        };
        view! {
            <p class="canary-actions">{buttons}{crate::ui::outcome_line("acted", said)}</p>
        }
    }

    fn ask(self, service: String, environment: String, force: bool) {
        self.confirming.set(None);
        leptos::task::spawn_local(async move {
            let request = ArgoSyncRequest {
                service,
                environment: environment.clone(),
                force,
            };
            self.answer
                .set(Some((environment, crate::api::argo_sync(request).await)));
        });
    }

    /// The card's buttons and what came of the last press. Force sync asks once more
    /// before it goes.
    fn view(self, service: &str, environment: &str) -> impl IntoView {
        let may = move || self.access.get().is_some_and(|a| a.may_promote);
        let (s1, e1) = (service.to_owned(), environment.to_owned());
        let (s2, e2) = (service.to_owned(), environment.to_owned());
        let (e3, e4) = (environment.to_owned(), environment.to_owned());
        let confirming = move || self.confirming.get().as_deref() == Some(e3.as_str());
        let force = {
            let confirming = confirming.clone();
            move |_| {
                if confirming() {
                    self.ask(s2.clone(), e2.clone(), true);
                } else {
                    self.confirming.set(Some(e2.clone()));
                }
            }
        };
        let said = move || {
            self.answer
                .get()
                .filter(|(env, _)| *env == e4)
                .map(|(_, result)| {
                    result
                        .map(|a| a.message)
                        .map_err(|e| format!("Not synced: {e}"))
                })
        };
        view! {
            <p class="argo-actions">
                <button type="button" class="sync" disabled=move || !may()
                    on:click=move |_| self.ask(s1.clone(), e1.clone(), false)>"Sync"</button>
                <button type="button" class="force-sync" disabled=move || !may() on:click=force>
                    {move || if confirming() {
                        "Confirm force sync (replaces what Argo CD cannot patch)"
                    } else {
                        "Force sync…"
                    }}
                </button>
                {crate::ui::why_not(self.access, "act through Argo CD")}
                {crate::ui::outcome_line("synced", said)}
            </p>
        }
    }
}

#[component]
pub fn K8sDeployments(
    service: String,
    environments: Vec<Environment>,
    actions: ArgoActions,
) -> impl IntoView {
    let asked = crate::nav::use_query().with_untracked(|q| q.get("env"));
    let selected = asked.filter(|e| environments.iter().any(|env| env.name == *e));
    let picker = (environments.len() > 1).then(|| {
        let links = environments
            .iter()
            .map(|env| {
                let href = crate::nav::environment_href(&service, &env.name);
                let current = (selected.as_deref() == Some(env.name.as_str())).then_some("page");
                view! { <li><a href=href aria-current=current>{env.name.clone()}</a></li> }
            })
            .collect_view();
        view! { <nav class="env-picker" aria-label="Environments"><ul>{links}</ul></nav> }
    });
    let nothing = environments.is_empty().then(|| {
        view! {
            <p class="state empty">
                {format!("Tower found no Argo CD Application and no Rollout of {service} in any environment yet.")}
            </p>
        }
    });
    let cards = environments
        .into_iter()
        .map(|env| {
            let picked = selected.as_ref().map(|s| *s == env.name);
            environment_card(&service, env, picked, actions)
        })
        .collect_view();
    let class = if selected.is_some() {
        "environments picked"
    } else {
        "environments"
    };
    view! {
        <section class="deployments k8s" aria-labelledby="deployments-title">
            <h2 id="deployments-title">"Deployments"</h2>
            {picker}
            {nothing}
            <div class=class>{cards}</div>
        </section>
    }
}

/// One environment's card; `picked`: `Some(true)` for the environment `&env=` names,
/// `Some(false)` for the others, `None` when none is named.
fn environment_card(
    service: &str,
    env: Environment,
    picked: Option<bool>,
    actions: ArgoActions,
) -> impl IntoView {
    let severity = match env.attention.as_ref().map(|a| a.severity) {
        Some(tower_shared::fleet::Severity::Failing) => "card env failing",
        Some(tower_shared::fleet::Severity::Attention) => "card env attention",
        Some(tower_shared::fleet::Severity::Notice) => "card env running",
        None => "card env",
    };
    let class = match picked {
        Some(true) => format!("{severity} selected"),
        Some(false) => format!("{severity} other"),
        None => severity.to_owned(),
    };
    let summary = env
        .rollout
        .as_ref()
        .map_or_else(|| "No Rollout here yet.".to_owned(), |r| r.summary.clone());
    let attention = env
        .attention
        .as_ref()
        .map(|a| view! { <p class="attention">"⚠ " {a.reason.clone()}</p> });
    let argo = env.argo.clone().map_or_else(
        || view! { <p class="argo missing">"No Argo CD Application for this environment."</p> }.into_any(),
        |a| {
            let unknown = || "unknown".to_owned();
            view! {
                <dl class="argo">
                    <dt>"Argo CD"</dt><dd>{a.name.clone()}</dd>
                    <dt>"Sync"</dt><dd>{a.sync.clone().unwrap_or_else(unknown)}</dd>
                    <dt>"Health"</dt><dd>{a.health.clone().unwrap_or_else(unknown)}</dd>
                    <dt>"Revision"</dt>
                    <dd class="commit">{revision(a.revision.as_deref(), a.revision_url.clone())}</dd>
                    <dt>"Last sync"</dt>
                    <dd>{a.last_synced_at.map_or_else(unknown, |t| t.format("%Y-%m-%d %H:%M UTC").to_string())}</dd>
                </dl>
                {a.message.clone().map(|m| view! { <p class="failure">{m}</p> })}
                {actions.view(service, &env.name)}
            }
            .into_any()
        },
    );
    let drawings = env.rollout.clone().map(rollout_drawings);
    // A new version on its way (not yet stable) may be acted on through Argo CD.
    let canary = (env.argo.is_some() && env.rollout.as_ref().is_some_and(|r| r.canary.is_some()))
        .then(|| actions.canary_view(service, &env.name));
    let evidence = env.rollout.as_ref().map(|r| {
        [("Canary", &r.canary), ("Stable", &r.stable)]
            .into_iter()
            .filter_map(|(role, rs)| Some((role, rs.as_ref()?.evidence.clone()?)))
            .map(|(role, e)| evidence_panel(service, role, e))
            .collect_view()
    });
    view! {
        <article class=class data-env=env.name.clone()>
            <h3>{env.name.clone()}<span class="where">{format!(" · {} / {}", env.cluster, env.namespace)}</span></h3>
            <p class="summary">{summary}</p>
            {attention}
            {drawings}
            {canary}
            {argo}
            {evidence}
        </article>
    }
}

/// A revision's first seven characters, linking its commit when Tower could build the link.
fn revision(revision: Option<&str>, url: Option<String>) -> AnyView {
    let Some(revision) = revision else {
        return "unknown".into_any();
    };
    let short: String = revision.chars().take(7).collect();
    match url {
        Some(href) => view! {
            <a href=href target="_blank" rel="noopener noreferrer" title=revision.to_owned()>{short}</a>
        }
        .into_any(),
        None => short.into_any(),
    }
}

/// What vouches for one deployed image: the sentence first, then each piece, missing ones
/// said plainly.
fn evidence_panel(service: &str, role: &'static str, e: Evidence) -> impl IntoView {
    let (class, badge) = match e.signing {
        Signing::Signed => ("evidence signed", "✔ Signed"),
        Signing::Failed => ("evidence unsigned", "✖ Signing failed"),
        Signing::Unsigned => ("evidence unsigned", "✖ Not signed"),
        Signing::Unknown => ("evidence unknown", "? No build found"),
    };
    let build = e.build.clone().map_or_else(
        || "none found".into_any(),
        |b| {
            let run = b.pipeline_run.clone().unwrap_or_else(|| b.name.clone());
            let href = crate::nav::tab_href(crate::nav::Tab::Pipelines, service, Some(&run));
            view! { <a href=href>{b.name.clone()}</a> }.into_any()
        },
    );
    let provenance = e.provenance.clone().map_or_else(
        || "no provenance recorded".into_any(),
        |p| {
            let source = p.source.clone().map(|s| {
                let commit = s.commit.clone().unwrap_or_else(|| "commit unknown".to_owned());
                let short: String = commit.chars().take(7).collect();
                let link = match s.url.clone() {
                    Some(href) => view! { <a href=href target="_blank" rel="noopener noreferrer">{short}</a> }.into_any(),
                    None => short.into_any(),
                };
                view! { <span class="source">" · from " {s.repository.clone()} " @ " {link}</span> }
            });
            let kind = p.predicate_type.clone().unwrap_or_else(|| "unknown type".to_owned());
            let builder = p.builder.clone().unwrap_or_else(|| "builder unknown".to_owned());
            view! {
                <span>{format!("{kind}, built by {builder}, {} materials", p.materials.len())}</span>
                {source}
            }
            .into_any()
        },
    );
    let transparency = match e.transparency.clone() {
        Some(Transparency {
            log_index: Some(n),
            url: Some(href),
        }) => view! {
            <a href=href target="_blank" rel="noopener noreferrer">{format!("entry {n}")}</a>
        }
        .into_any(),
        Some(Transparency {
            log_index: Some(n),
            url: None,
        }) => format!("entry {n}").into_any(),
        Some(_) => "an entry Tower cannot read".into_any(),
        None => "no transparency log entry".into_any(),
    };
    let signature = e.signature.clone().map_or_else(
        || "no signature".to_owned(),
        |k| format!("stored under {k}"),
    );
    let sbom = e
        .sbom
        .clone()
        .map_or_else(|| "no SBOM published".to_owned(), |s| s.uri);
    // Without the build, what it would carry is unknown — never "none".
    let found = e.build.is_some();
    let or_unknown = |shown: AnyView| {
        if found {
            shown
        } else {
            view! { <span class="unknown" title="no build of this image was found">"unknown"</span> }
                .into_any()
        }
    };
    view! {
        <section class=class aria-label=format!("{role} image evidence")>
            <h4>{format!("{role} image evidence ")}<span class="verdict">{badge}</span></h4>
            <p class="evidence-summary">{e.summary.clone()}</p>
            <dl>
                <dt>"Image"</dt><dd class="image">{e.image.clone()}</dd>
                <dt>"Build"</dt><dd>{build}</dd>
                <dt>"Provenance"</dt><dd class="provenance">{or_unknown(provenance)}</dd>
                <dt>"Signature"</dt><dd class="signature">{or_unknown(signature.into_any())}</dd>
                <dt>"Transparency log"</dt><dd class="transparency">{or_unknown(transparency)}</dd>
                <dt>"SBOM"</dt><dd class="sbom">{or_unknown(sbom.into_any())}</dd>
            </dl>
        </section>
    }
}

fn rollout_drawings(rollout: RolloutView) -> impl IntoView {
    let metrics: Vec<Metric> = rollout
        .analysis
        .iter()
        .flat_map(|a| a.metrics.clone())
        .collect();
    view! {
        {(!rollout.steps.is_empty()).then(|| ramp(&rollout))}
        {split(&rollout)}
        {metrics.into_iter().map(metric_chart).collect_view()}
    }
}

/// The canary's steps as a row of boxes: done filled, the current one outlined.
fn ramp(rollout: &RolloutView) -> impl IntoView {
    const W: usize = 72;
    let width = rollout.steps.len() * W;
    let label = |kind: StepKind, weight: Option<u32>, duration: &Option<Option<String>>| match kind
    {
        StepKind::SetWeight => weight.map_or_else(|| "weight ?".to_owned(), |w| format!("{w}%")),
        StepKind::Pause => match duration {
            Some(Some(d)) => format!("pause {d}"),
            _ => "pause ∞".to_owned(),
        },
        StepKind::Analysis => "analysis".to_owned(),
        StepKind::Experiment => "experiment".to_owned(),
        StepKind::Other => "step".to_owned(),
    };
    let described: Vec<String> = rollout
        .steps
        .iter()
        .map(|s| {
            let state = match s.status {
                StepStatus::Done => "done",
                StepStatus::Current => "current",
                StepStatus::Pending => "to come",
            };
            format!("{} ({state})", label(s.kind, s.weight, &s.duration))
        })
        .collect();
    let aria = format!("Canary steps: {}", described.join(", "));
    let boxes = rollout
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let x = i * W + 2;
            let class = match s.status {
                StepStatus::Done => "ramp-step done",
                StepStatus::Current => "ramp-step current",
                StepStatus::Pending => "ramp-step pending",
            };
            let text = label(s.kind, s.weight, &s.duration);
            view! {
                <g class=class>
                    <rect x=x y="4" width=W - 6 height="28" rx="4"></rect>
                    <text x=x + (W - 6) / 2 y="23" text-anchor="middle">{text}</text>
                </g>
            }
        })
        .collect_view();
    view! {
        <figure class="ramp">
            <svg viewBox=format!("0 0 {width} 36") role="img" aria-label=aria>{boxes}</svg>
        </figure>
    }
}

/// The traffic split as one bar: stable and canary shares, with their images and pods.
fn split(rollout: &RolloutView) -> impl IntoView {
    let canary = rollout.canary_weight.unwrap_or(0).min(100);
    let stable = 100 - canary;
    let pods = |rs: &Option<tower_shared::deployments::ReplicaSetView>| {
        rs.as_ref().map_or_else(
            || "unknown".to_owned(),
            |r| {
                let count = |n: Option<u32>| n.map_or_else(|| "?".to_owned(), |n| n.to_string());
                format!(
                    "{} ({}/{} ready)",
                    r.image
                        .clone()
                        .unwrap_or_else(|| "image unknown".to_owned()),
                    count(r.ready),
                    count(r.replicas)
                )
            },
        )
    };
    let weights_known = rollout.canary_weight.is_some();
    let aria = if weights_known {
        format!("Traffic: {stable}% stable, {canary}% canary")
    } else {
        "Traffic split unknown".to_owned()
    };
    let has_canary = rollout.canary.is_some();
    view! {
        <figure class="split">
            <svg viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label=aria>
                <rect class="stable" x="0" y="0" width=stable height="10"></rect>
                <rect class="canary" x=stable y="0" width=canary height="10"></rect>
            </svg>
            <figcaption>
                <span class="stable">{format!("Stable {stable}%: {}", pods(&rollout.stable))}</span>
                {has_canary.then(|| view! {
                    <span class="canary">{format!(" · Canary {canary}%: {}", pods(&rollout.canary))}</span>
                })}
            </figcaption>
        </figure>
    }
}

/// The threshold a success condition like `result[0] < 0.05` names, if it is that simple.
fn threshold(condition: Option<&str>) -> Option<f64> {
    let condition = condition?;
    let (_, number) = condition.rsplit_once(['<', '>'])?;
    number.trim_start_matches('=').trim().parse().ok()
}

/// One metric's measurements over time as points (failed ones marked ✖), against the
/// threshold its success condition names.
fn metric_chart(metric: Metric) -> impl IntoView {
    const W: f64 = 240.0;
    const H: f64 = 60.0;
    let values: Vec<(f64, bool)> = metric
        .measurements
        .iter()
        .filter_map(|m| {
            Some((
                m.value?,
                matches!(m.phase.as_deref(), Some("Failed" | "Error")),
            ))
        })
        .collect();
    let limit = threshold(metric.success_condition.as_deref());
    let top = values
        .iter()
        .map(|(v, _)| *v)
        .chain(limit)
        .fold(0.0_f64, f64::max)
        .max(f64::EPSILON)
        * 1.2;
    let y = move |v: f64| H - v / top * (H - 4.0);
    let step = if values.len() > 1 {
        (W - 10.0) / (values.len() - 1) as f64
    } else {
        0.0
    };
    let points: Vec<(f64, f64, bool)> = values
        .iter()
        .enumerate()
        .map(|(i, (v, failed))| (5.0 + i as f64 * step, y(*v), *failed))
        .collect();
    let line = points
        .iter()
        .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
        .collect::<Vec<_>>()
        .join(" ");
    let failed = values.iter().filter(|(_, f)| *f).count();
    let aria = format!(
        "{}: {} measurements, {failed} failed{}",
        metric.name,
        values.len(),
        metric
            .success_condition
            .as_deref()
            .map(|c| format!("; passes when {c}"))
            .unwrap_or_default()
    );
    let dots = points
        .into_iter()
        .map(|(x, y, failed)| {
            if failed {
                view! { <text class="failed" x=x y=y + 4.0 text-anchor="middle">"✖"</text> }
                    .into_any()
            } else {
                view! { <circle class="ok" cx=x cy=y r="2.5"></circle> }.into_any()
            }
        })
        .collect_view();
    view! {
        <figure class="metric">
            <svg viewBox=format!("0 0 {W} {H}") role="img" aria-label=aria.clone()>
                {limit.map(|l| view! { <line class="threshold" x1="0" x2=W y1=y(l) y2=y(l)></line> })}
                <polyline class="values" points=line fill="none"></polyline>
                {dots}
            </svg>
            <figcaption>{aria}</figcaption>
        </figure>
    }
}
