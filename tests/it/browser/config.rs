//! The Config tab: prod values changed through the form, proposed as one pull request.

use super::*;

#[tokio::test]
async fn prod_values_are_changed_through_the_form_and_proposed_as_one_pull_request() {
    use hangar_sim::stories::fleet::PROJECT_ERROR;
    let tower = crate::support::Live::start(0.0).await.unwrap();
    let (stale, failing, app) = crate::config::apps(&tower);
    let repo = format!("acme/gitops-{app}");
    let path = "glidepath/envs/prod.yaml";
    let before = crate::config::file_on(&tower, &repo, "main", path).await;
    let browser = Browser::start().await.unwrap();
    browser
        .checked("config-form", async {
            let c = &browser.client;
            c.goto(&tower.url(&format!("/tower?view=config&service={app}&file=env:prod")))
                .await?;
            let value = |css: &'static str| async move {
                let v = c
                    .execute(
                        "const e = document.querySelector(arguments[0]); return e ? e.value : null;",
                        vec![serde_json::json!(css)],
                    )
                    .await?;
                anyhow::Ok(v.as_str().map(str::to_owned))
            };
            eventually_every(LOOK, Duration::from_secs(20), "the prod values as a form", || async {
                Ok(value("#field-replicas").await?.as_deref() == Some("3"))
            })
            .await?;
            browser.check_page("config-form").await?;

            // A bad value is flagged before saving, and the save waits for it.
            type_into(c, "#field-replicas", "0").await?;
            eventually_every(LOOK, Duration::from_secs(10), "the replicas' problem", || async {
                Ok(text_of(c, "#field-replicas-problem")
                    .await?
                    .is_some_and(|t| t.contains("must be at least 1")))
            })
            .await?;
            let disabled = c
                .execute(
                    "return document.querySelector('button.save-config').disabled;",
                    vec![],
                )
                .await?;
            anyhow::ensure!(disabled == true, "a draft with a problem can be saved");
            browser.screenshot("config-problem").await?;

            // A replica count and an env var: the diff shows exactly those lines.
            type_into(c, "#field-replicas", "5").await?;
            eventually_every(LOOK, Duration::from_secs(10), "the problem gone", || async {
                Ok(text_of(c, "#field-replicas-problem").await?.unwrap_or_default().is_empty())
            })
            .await?;
            type_into(c, "#field-env-LOG_FORMAT", "text").await?;
            eventually_every(LOOK, Duration::from_secs(10), "the diff of both lines", || async {
                let diff = text_of(c, ".config-editor pre.diff").await?.unwrap_or_default();
                Ok(diff.contains("+ replicas: 5   # one per zone in prod")
                    && diff.contains("+   LOG_FORMAT: text"))
            })
            .await?;
            browser.screenshot("config-diff").await?;
            press(c, "button.save-config:enabled").await?;
            eventually_every(LOOK, Duration::from_secs(20), "the pull request opened", || async {
                Ok(text_of(c, ".config-outcome")
                    .await?
                    .is_some_and(|t| t.starts_with("Opened pull request")))
            })
            .await?;
            eventually_every(LOOK, Duration::from_secs(20), "the file read from its pull request", || async {
                Ok(text_of(c, ".file-source")
                    .await?
                    .is_some_and(|t| t.contains("from pull request #")))
            })
            .await?;
            browser.screenshot("config-pull-request").await?;

            // What the platform made: the stale secret, the failing composed resource.
            c.goto(&tower.url(&format!("/tower?view=config&service={stale}")))
                .await?;
            let secret = "tr[data-env='prod'][data-secret]";
            eventually_every(LOOK, Duration::from_secs(20), "the stale secret", || async {
                Ok(text_of(c, secret)
                    .await?
                    .is_some_and(|t| t.contains("Not synced: could not get secret data from provider")))
            })
            .await?;
            browser.check_page("config-secrets").await?;
            browser.screenshot("config-stale-secret").await?;
            c.goto(&tower.url(&format!("/tower?view=config&service={failing}")))
                .await?;
            eventually_every(LOOK, Duration::from_secs(20), "the failing Project", || async {
                Ok(text_of(c, "tr[data-kind='Project']")
                    .await?
                    .is_some_and(|t| t.contains(PROJECT_ERROR)))
            })
            .await?;
            browser.screenshot("config-failing-composed").await?;

            // Both amber on the fleet, with their reasons.
            c.goto(&tower.url("/tower")).await?;
            eventually_every(LOOK, Duration::from_secs(20), "the fleet's amber", || async {
                let cell = c
                    .execute(
                        "const row = [...document.querySelectorAll('tr')].find(r => r.querySelector('.app-name')?.textContent.trim() === arguments[0]); \
                         return row ? [...row.querySelectorAll('td.cell.attention')].map(td => td.title) : [];",
                        vec![serde_json::json!(stale)],
                    )
                    .await?;
                let issue = c
                    .execute(
                        "const row = [...document.querySelectorAll('tr')].find(r => r.querySelector('.app-name')?.textContent.trim() === arguments[0]); \
                         return row?.querySelector('.platform-issue')?.title ?? '';",
                        vec![serde_json::json!(failing)],
                    )
                    .await?;
                let amber = cell.as_array().is_some_and(|cells| {
                    cells.iter().any(|t| t.as_str().is_some_and(|t| t.contains("not synced")))
                });
                Ok(amber && issue.as_str().is_some_and(|t| t.contains(PROJECT_ERROR)))
            })
            .await?;
            browser.screenshot("fleet-config-attention").await?;
            Ok(())
        })
        .await
        .unwrap();
    browser.close().await.unwrap();

    // In the simulated GitHub: one pull request, only those two lines changed, comments kept.
    let config = crate::records::open_pulls(&tower, &repo, "tower/config-").await;
    assert_eq!(config.len(), 1, "{config:?}");
    let branch = config[0]["head"]["ref"].as_str().unwrap();
    let after = crate::config::file_on(&tower, &repo, branch, path).await;
    let changed: Vec<(&str, &str)> = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        changed,
        vec![
            (
                "replicas: 3   # one per zone in prod",
                "replicas: 5   # one per zone in prod"
            ),
            ("  LOG_FORMAT: json", "  LOG_FORMAT: text"),
        ]
    );
    assert_eq!(before.lines().count(), after.lines().count());
    assert!(after.contains("# JSON is what the log pipeline parses"));
    assert_eq!(
        crate::config::file_on(&tower, &repo, "main", path).await,
        before
    );
}
