//! The Deployments tab: a cloud target, the Kubernetes canary in plain words, live, and the
//! canary actions.

use super::*;

#[tokio::test]
async fn cloud_deployments_tab_shows_a_simulated_ecs_service_and_opens_its_runs() {
    // The simulated world, frozen at the demo's start: orders-api (Go on AWS ECS) has a
    // successful deploy, a failed one, and one in progress.
    let demo = Demo::start_with(&["--speed", "0"]).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("deployments", async {
            let c = &browser.client;
            c.goto(&format!(
                "{}tower?view=deployments&service=orders-api",
                demo.url
            ))
            .await?;
            let section = c
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css("section.deployments.cloud"))
                .await
                .context("the cloud Deployments tab never rendered")?;
            let target = section.find(Locator::Css(".target")).await?.text().await?;
            anyhow::ensure!(
                target.contains("AWS ECS")
                    && target.contains("orders-api")
                    && target.contains("eu-west-1"),
                "target reads {target:?}"
            );
            let console = section
                .find(Locator::Css("a.console"))
                .await?
                .attr("href")
                .await?;
            anyhow::ensure!(
                console.as_deref().is_some_and(|u| u.contains(
                    "console.aws.amazon.com/ecs/v2/clusters/apps-dev/services/orders-api"
                )),
                "console link {console:?}"
            );
            let blind = section
                .find(Locator::Css(".blind-spots"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(
                blind.contains("cannot see whether the service is healthy"),
                "{blind:?}"
            );

            let running = section
                .find(Locator::Css(".card.running"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(
                running.contains("77aa9f0") && running.contains("◌ Running"),
                "in progress reads {running:?}"
            );
            let failing = section
                .find(Locator::Css(".card.failing"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(
                failing.contains("deploy-aws-ecs")
                    && failing.contains("did not stabilize")
                    && failing.contains("previous image"),
                "failure reads {failing:?}"
            );
            let ok = section.find(Locator::Css(".card.ok")).await?.text().await?;
            anyhow::ensure!(
                ok.contains("0c1d2e3") && ok.contains("✔ Succeeded"),
                "last success reads {ok:?}"
            );
            let rows = section
                .find_all(Locator::Css("table.history tbody tr"))
                .await?;
            anyhow::ensure!(rows.len() == 3, "{} history rows", rows.len());
            browser.check_page("deployments").await?;
            // Every action on the page is reachable by keyboard, with visible focus.
            browser.keyboard_reaches_everything().await?;

            // The newest run opens in the Pipelines tab, by name.
            let link = rows[0].find(Locator::Css("a")).await?;
            let run = link.text().await?;
            link.click().await?;
            let focused = c
                .wait()
                .at_most(Duration::from_secs(10))
                .for_element(Locator::Css("section.focused-run .run-name"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(focused == run, "opened {focused:?}, clicked {run:?}");
            let url = c.current_url().await?;
            anyhow::ensure!(
                url.query().is_some_and(
                    |q| q.contains("view=pipelines") && q.contains(&format!("run={run}"))
                ),
                "{url}"
            );
            let tasks = c
                .find_all(Locator::Css("section.focused-run .dag g.node"))
                .await?;
            anyhow::ensure!(tasks.len() == 3, "{} tasks in the run's graph", tasks.len());
            browser.check_page("pipelines").await?;
            // Every action on the page is reachable by keyboard, with visible focus.
            browser.keyboard_reaches_everything().await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn the_kubernetes_deployments_tab_says_the_paused_canary_in_plain_words_and_draws_it() {
    // The world standing still (moved past the canary's ten minutes at 20 % if it started
    // in them): flight-api's prod canary is paused at 40 % while a background analysis
    // measures its error rate.
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let canary = tower.paused_canary_at_40().await.unwrap();
    assert_eq!(canary, "flight-api", "the vision's canary");
    let browser = Browser::start().await.unwrap();
    browser
        .checked("deployments-k8s", async {
            let c = &browser.client;
            c.goto(&tower.url(&format!("/tower?service={canary}")))
                .await?;
            let prod = c
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(
                    "section.deployments.k8s article[data-env='prod']",
                ))
                .await
                .context("the Kubernetes Deployments tab never rendered prod")?;
            let summary = prod.find(Locator::Css(".summary")).await?.text().await?;
            anyhow::ensure!(
                summary.contains("paused at 40% of traffic")
                    && summary.contains("waiting for someone to promote it")
                    && !summary.contains("Suspended"),
                "summary reads {summary:?}"
            );
            // The ramp marks the current step, the split shows 60/40, the metric is charted.
            let current = prod
                .find_all(Locator::Css(".ramp .ramp-step.current"))
                .await?;
            anyhow::ensure!(current.len() == 1, "{} current steps", current.len());
            let split = prod
                .find(Locator::Css(".split svg"))
                .await?
                .attr("aria-label")
                .await?;
            anyhow::ensure!(
                split.as_deref() == Some("Traffic: 60% stable, 40% canary"),
                "split {split:?}"
            );
            let points = prod.find_all(Locator::Css(".metric circle.ok")).await?;
            anyhow::ensure!(!points.is_empty(), "no measurement drawn");
            let envs = texts(c, "section.deployments.k8s article h3").await?;
            anyhow::ensure!(
                envs.iter()
                    .map(|e| e.split(' ').next().unwrap_or_default())
                    .collect::<Vec<_>>()
                    == ["dev", "staging", "prod"],
                "environments {envs:?}"
            );
            // The canary's image is vouched for beside it: signed, its provenance's commit and
            // its transparency log entry linked, its SBOM named.
            let evidence = prod
                .find(Locator::Css(
                    "section.evidence.signed[aria-label='Canary image evidence']",
                ))
                .await
                .context("no signed evidence for the canary's image")?;
            let badge = evidence
                .find(Locator::Css(".verdict"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(badge == "✔ Signed", "badge {badge:?}");
            let rekor = evidence
                .find(Locator::Css(".transparency a"))
                .await?
                .attr("href")
                .await?
                .unwrap_or_default();
            anyhow::ensure!(
                rekor.starts_with("https://search.sigstore.dev/?logIndex="),
                "transparency link {rekor:?}"
            );
            let commit = evidence
                .find(Locator::Css(".provenance .source a"))
                .await?
                .attr("href")
                .await?
                .unwrap_or_default();
            anyhow::ensure!(
                commit.starts_with(&format!("https://github.com/acme/{canary}/commit/")),
                "provenance commit link {commit:?}"
            );
            let sbom = evidence.find(Locator::Css(".sbom")).await?.text().await?;
            anyhow::ensure!(sbom.ends_with(".sbom"), "sbom {sbom:?}");
            browser.check_page("deployments-k8s").await?;

            // A deep link to one environment marks it, and the picker names it.
            c.goto(&tower.url(&format!(
                "/tower?view=deployments&service={canary}&env=prod"
            )))
            .await?;
            c.wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css("article.card.env.selected[data-env='prod']"))
                .await
                .context("env=prod did not pick prod")?;
            let picked = texts(c, ".env-picker a[aria-current='page']").await?;
            anyhow::ensure!(picked == ["prod"], "picker marks {picked:?}");
            let others = c.find_all(Locator::Css("article.card.env.other")).await?;
            anyhow::ensure!(others.len() == 2, "{} other environments", others.len());
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn the_deployments_tab_follows_a_canary_live_and_explains_an_aborted_one() {
    use hangar_sim::stories::fleet::{Chains, Role, SteadyFleet};
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let browser = Browser::start().await.unwrap();
    browser
        .checked("deployments-live", async {
            let c = &browser.client;
            // A canary a minute into its prod rollout: 20 %, pausing ten minutes.
            let moving = crate::support::fleet_app(Role::CompletingCanary);
            let start = moving.prod_rollout_at(tower.world_now());
            tower.advance_world((start - tower.world_now()).num_seconds() + 60);
            tower
                .deployments_until(&moving.name, "the canary at 20%", |body| {
                    crate::support::prod_rollout(body)["canaryWeight"] == 20
                })
                .await?;
            c.goto(&tower.url(&format!(
                "/tower?view=deployments&service={}&env=prod",
                moving.name
            )))
            .await?;
            eventually_every(LOOK, Duration::from_secs(20), "the canary at 20%", || async {
                Ok(prod_card(c).await.is_ok_and(|(_, split)| split == "Traffic: 80% stable, 20% canary"))
            })
            .await?;
            let (summary, _) = prod_card(c).await?;
            anyhow::ensure!(
                summary.contains("paused at 20% of traffic, for a pause of 10m that ends on its own"),
                "summary {summary:?}"
            );
            // Ten minutes on, the page redraws at 40 % by itself: no reload (the mark stays).
            c.execute("window.towerMark = 'still here';", vec![]).await?;
            tower.advance_world(600);
            eventually_every(LOOK, Duration::from_secs(20), "the canary at 40% without a reload", || async {
                Ok(prod_card(c).await.is_ok_and(|(_, split)| split == "Traffic: 60% stable, 40% canary"))
            })
            .await?;
            let mark = c.execute("return window.towerMark || null;", vec![]).await?;
            anyhow::ensure!(mark == "still here", "the page was reloaded: {mark}");
            browser.screenshot("deployments-canary-live").await?;

            // A canary whose step analysis failed: aborted, the failing metric named and its
            // failed measurements marked on the chart.
            let aborting = crate::support::fleet_app(Role::AbortedCanary);
            let start = aborting.prod_rollout_at(tower.world_now());
            tower.advance_world((start - tower.world_now()).num_seconds() + 300);
            // The release before was aborted too: wait for this one's canary.
            let image = aborting.prod_image(tower.world_now());
            tower
                .deployments_until(&aborting.name, "the canary aborted", |body| {
                    let rollout = crate::support::prod_rollout(body);
                    rollout["aborted"] == true && rollout["canary"]["image"] == image.as_str()
                })
                .await?;
            c.goto(&tower.url(&format!(
                "/tower?view=deployments&service={}&env=prod",
                aborting.name
            )))
            .await?;
            // The Rollout's abort may reach Tower a moment before the AnalysisRun that says
            // why: the summary names the failed metric once it has.
            eventually_every(LOOK, Duration::from_secs(20), "the aborted canary and why", || async {
                Ok(prod_card(c).await.is_ok_and(|(summary, _)| {
                    summary.contains("aborted") && summary.contains("the analysis metric")
                }))
            })
            .await?;
            let (summary, split) = prod_card(c).await?;
            anyhow::ensure!(
                summary.contains("all traffic is back on the stable version")
                    && summary.contains("the analysis metric error-rate failed"),
                "summary {summary:?}"
            );
            anyhow::ensure!(split == "Traffic: 100% stable, 0% canary", "split {split:?}");
            // The AnalysisRun's measurements may reach Tower a moment after the Rollout's
            // abort: the chart marks them when they do.
            eventually_every(LOOK, Duration::from_secs(20), "three failed measurements marked", || async {
                let failed = c
                    .find_all(Locator::Css("article[data-env='prod'] .metric text.failed"))
                    .await?;
                Ok(failed.len() == 3)
            })
            .await?;
            let card = c
                .find(Locator::Css("article.card.env.failing[data-env='prod'] .attention"))
                .await?
                .text()
                .await?;
            anyhow::ensure!(card.contains("analysis metric error-rate failed"), "attention {card:?}");
            browser.check_page("deployments-aborted").await?;

            // An app whose builds Tekton Chains does not sign: said plainly, not hidden.
            let fleet = SteadyFleet::new(1, crate::support::test_start());
            let unsigned = fleet
                .apps
                .iter()
                .find(|a| a.chains == Chains::Absent && a.role == Role::Steady)
                .context("an app without Chains")?;
            c.goto(&tower.url(&format!(
                "/tower?view=deployments&service={}&env=prod",
                unsigned.name
            )))
            .await?;
            let evidence = c
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(
                    "article[data-env='prod'] section.evidence.unsigned[aria-label='Stable image evidence']",
                ))
                .await
                .context("no unsigned evidence panel")?;
            let badge = evidence.find(Locator::Css(".verdict")).await?.text().await?;
            let said = evidence.text().await?;
            anyhow::ensure!(badge == "✖ Not signed", "badge {badge:?}");
            for plainly in ["no provenance recorded", "no transparency log entry", "no SBOM published"] {
                anyhow::ensure!(said.contains(plainly), "{plainly:?} not said in {said:?}");
            }
            browser.check_page("deployments-evidence-unsigned").await?;

            // storefront's prod runs a release whose build the Tekton pruner removed: what
            // that build would carry is unknown, never said to be missing.
            c.goto(&tower.url("/tower?view=deployments&service=storefront&env=prod"))
                .await?;
            let evidence = c
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(
                    "article[data-env='prod'] section.evidence.unknown[aria-label='Stable image evidence']",
                ))
                .await
                .context("no evidence panel without a build")?;
            let said = evidence.text().await?;
            anyhow::ensure!(said.contains("? No build found"), "{said:?}");
            for piece in [".provenance", ".signature", ".transparency", ".sbom"] {
                let shown = evidence.find(Locator::Css(piece)).await?.text().await?;
                anyhow::ensure!(shown == "unknown", "{piece} says {shown:?}");
            }
            for absent in ["no SBOM published", "no signature", "no provenance recorded"] {
                anyhow::ensure!(!said.contains(absent), "{absent:?} said without a build: {said:?}");
            }
            browser.check_page("deployments-evidence-unknown").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}

#[tokio::test]
async fn a_paused_canary_is_resumed_and_another_aborted_through_argo_cd() {
    use hangar_sim::stories::fleet::{Role, SteadyFleet, AWAITING_PROMOTION, PAUSED_CANARY};
    let tower = crate::support::Live::start(0.0).await.unwrap();
    // The completing canary's app is team-b's: move the world into its walk.
    let now = tower.world_now();
    let fleet = SteadyFleet::new(1, now);
    let walking = fleet.app(Role::CompletingCanary).unwrap();
    assert_eq!(walking.owner, "team-b", "the guest does not own it");
    let (other, started) = (walking.name.clone(), walking.prod_rollout_started(now));
    if now - started > chrono::Duration::seconds(600) {
        tower.advance_world((walking.prod_rollout_at(now) - now).num_seconds() + 60);
    }
    crate::canary_actions::to_the_pause(&tower);
    let browser = Browser::start().await.unwrap();
    browser
        .checked("canary-actions", async {
            let c = &browser.client;
            let card = |env: &str| format!("article[data-env='{env}']");
            let deployments = |app: &str, env: &str| {
                tower.url(&format!("/tower?view=deployments&service={app}&env={env}"))
            };

            // Someone else's canary: its buttons are there, disabled, with the reason.
            c.goto(&deployments(&other, "prod")).await?;
            let buttons = format!("{} button.canary-action", card("prod"));
            // Read in one go, and again if the card was being redrawn (the platform moves).
            let disabled = std::cell::RefCell::new(Vec::new());
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the team-b canary's actions",
                || async {
                    let read = c
                        .execute(
                            "return Array.from(document.querySelectorAll(arguments[0])).map(b => b.disabled);",
                            vec![serde_json::json!(buttons)],
                        )
                        .await?;
                    let read = read.as_array().cloned().unwrap_or_default();
                    let any = !read.is_empty();
                    *disabled.borrow_mut() = read;
                    Ok(any)
                },
            )
            .await?;
            let disabled = disabled.into_inner();
            anyhow::ensure!(
                disabled.iter().all(|x| x == true),
                "a non-owner's button is enabled: {disabled:?}"
            );
            let why = text_of(c, &format!("{} .why-not", card("prod"))).await?;
            anyhow::ensure!(
                why.as_deref().is_some_and(|w| w.contains("team-b")),
                "the reason: {why:?}"
            );
            browser.screenshot("canary-actions-not-owner").await?;

            // The paused canary: Resume says where the traffic goes, and takes it there.
            c.goto(&deployments(PAUSED_CANARY, "prod")).await?;
            let resume = format!(
                "{} button.canary-action[data-action='resume']:enabled",
                card("prod")
            );
            eventually_every(LOOK, Duration::from_secs(20), "the resume button", || async {
                Ok(text_of(c, &resume)
                    .await?
                    .is_some_and(|t| t == "Resume: traffic goes from 40% to 80%"))
            })
            .await?;
            browser.check_page("canary-actions").await?;
            browser.screenshot("canary-paused-actions").await?;
            press(c, &resume).await?;
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "the canary at its next step",
                || async {
                    let said = text_of(
                        c,
                        &format!("{} .canary-actions [role='status']", card("prod")),
                    )
                    .await?;
                    let summary = text_of(c, &format!("{} .summary", card("prod"))).await?;
                    Ok(said.is_some_and(|s| s.starts_with("Argo CD ran"))
                        && summary.is_some_and(|s| s.contains("80%")))
                },
            )
            .await?;
            anyhow::ensure!(tower.world.served.argocd_actions().len() == 1);
            browser.screenshot("canary-resumed").await?;

            // Another canary — a release promoted to staging — aborted: asked twice, then
            // all traffic is back on stable.
            crate::promotions::canary_in_staging(&tower).await;
            c.goto(&deployments(AWAITING_PROMOTION, "staging")).await?;
            let abort = format!(
                "{} button.canary-action[data-action='abort']:enabled",
                card("staging")
            );
            eventually_every(LOOK, Duration::from_secs(20), "the abort button", || async {
                Ok(text_of(c, &abort)
                    .await?
                    .is_some_and(|t| t.starts_with("Abort: all traffic back to")))
            })
            .await?;
            press(c, &abort).await?;
            eventually_every(
                LOOK,
                Duration::from_secs(10),
                "the abort's confirmation",
                || async {
                    Ok(text_of(c, &abort)
                        .await?
                        .is_some_and(|t| t.starts_with("Confirm abort")))
                },
            )
            .await?;
            anyhow::ensure!(tower.world.served.argocd_actions().len() == 1, "not yet");
            press(c, &abort).await?;
            eventually_every(
                LOOK,
                Duration::from_secs(20),
                "traffic back on stable",
                || async {
                    Ok(text_of(c, &format!("{} .summary", card("staging")))
                        .await?
                        .is_some_and(|s| s.contains("all traffic is back on the stable version")))
                },
            )
            .await?;
            let retry = format!(
                "{} button.canary-action[data-action='retry']",
                card("staging")
            );
            eventually_every(LOOK, Duration::from_secs(20), "a retry offered", || async {
                Ok(!c.find_all(Locator::Css(&retry)).await?.is_empty())
            })
            .await?;
            anyhow::ensure!(tower.world.served.argocd_actions().len() == 2);
            browser.screenshot("canary-aborted").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();
}
