//! Links Tower puts on its pages from cluster and GitHub data. A field a tenant controls (a
//! deploy run's region, a Repository's `htmlUrl`, an annotation) must not be able to point a
//! button anywhere else: a link is `https:`, on the host it is about, with every piece Tower
//! puts into its path percent-encoded.

/// A URL that passed one of this module's checks: the only kind a derivation links to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked(String);

impl Checked {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// GitHub's web host (pull requests, repositories), besides a GitHub Enterprise host named
/// in the snapshot ([`crate::snapshot::Snapshot::github_host`]).
pub const GITHUB_HOST: &str = "github.com";

/// `url` when it is `https:` on a host `host_ok` accepts, with nothing between the scheme
/// and the host (no credentials, no backslashes, no spaces or control characters).
pub fn https_on(url: &str, host_ok: impl Fn(&str) -> bool) -> Option<&str> {
    let rest = url
        .get(..8)
        .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
        .map(|_| &url[8..])?;
    if url
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '\\')
    {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = &rest[..end];
    let host = host.strip_suffix(":443").unwrap_or(host);
    let plain = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    (plain && host_ok(&host.to_ascii_lowercase())).then_some(url)
}

/// A GitHub web link (`html_url`, a Repository's `htmlUrl`): on github.com or `enterprise`.
pub fn github(url: &str, enterprise: Option<&str>) -> Option<Checked> {
    https_on(url, |host| {
        host == GITHUB_HOST || enterprise.is_some_and(|e| e.eq_ignore_ascii_case(host))
    })
    .map(|url| Checked(url.to_owned()))
}

/// A commit's page on GitHub: `repository` (a clone or web address, `.git` or not) on
/// github.com or `enterprise`, then `/commit/` and `commit` encoded as one segment.
pub fn github_commit(repository: &str, commit: &str, enterprise: Option<&str>) -> Option<Checked> {
    let repository = repository.trim_end_matches('/').trim_end_matches(".git");
    let checked = github(repository, enterprise)?;
    Some(Checked(format!("{}/commit/{}", checked.0, segment(commit))))
}

/// A cloud console link as [`crate::cloud::console_url`] builds it: on a region's AWS
/// console or Azure's portal.
pub fn cloud_console(url: &str) -> Option<Checked> {
    https_on(url, |host| {
        host == "portal.azure.com"
            || host
                .strip_suffix(".console.aws.amazon.com")
                .and_then(aws_region)
                .is_some()
    })
    .map(|url| Checked(url.to_owned()))
}

/// `base` (a URL from Tower's configuration: any `https:` host) followed by `segments`,
/// each encoded with [`segment`]. Constant segments are written as they are (`"projects"`).
pub fn under(base: &str, segments: &[&str]) -> Option<Checked> {
    let base = https_on(base, |_| true)?.trim_end_matches('/');
    if base[8..].contains(['?', '#']) {
        return None;
    }
    let mut url = base.to_owned();
    for piece in segments {
        url.push('/');
        url.push_str(&segment(piece));
    }
    Some(Checked(url))
}

/// A page of Tower itself (`/tower?key=value&…`), each value encoded with [`segment`]:
/// a link that stays on the page's own origin.
pub fn tower_page(query: &[(&str, &str)]) -> Checked {
    let query: Vec<String> = query
        .iter()
        .map(|(key, value)| format!("{key}={}", segment(value)))
        .collect();
    Checked(format!("/tower?{}", query.join("&")))
}

/// `text` as one path segment (or query value, or fragment piece): everything but RFC 3986's
/// unreserved characters percent-encoded, so it cannot add a segment, a query or a fragment.
pub fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `region` when it is shaped like an AWS region (`eu-west-1`, `us-gov-west-1`,
/// `ap-southeast-2`): it becomes part of the console's host name.
pub fn aws_region(region: &str) -> Option<&str> {
    let parts: Vec<&str> = region.split('-').collect();
    let letters = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase());
    let ok = (3..=4).contains(&parts.len())
        && parts[0].len() == 2
        && parts[..parts.len() - 1].iter().all(letters)
        && parts.last().is_some_and(|n| {
            !n.is_empty() && n.len() <= 2 && n.bytes().all(|b| b.is_ascii_digit())
        });
    ok.then_some(region)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_on_the_expected_host_passes() {
        let gh = |url| github(url, None).map(Checked::into_string);
        assert_eq!(
            gh("https://github.com/acme/shop/pull/7").as_deref(),
            Some("https://github.com/acme/shop/pull/7")
        );
        for hostile in [
            "http://github.com/acme/shop",
            "javascript:alert(1)//https://github.com/",
            "https://github.com.evil.example/acme",
            "https://evil.example/github.com/acme",
            "https://user@github.com/acme",
            "https://github.com@evil.example/acme",
            "https://evil.example\\@github.com/",
            "https://github.com/acme/shop\n",
            "https:/github.com/acme",
            "https://",
            "data:text/html,hi",
            "",
        ] {
            assert_eq!(gh(hostile), None, "{hostile:?}");
        }
        assert!(github("HTTPS://GitHub.com:443/acme", None).is_some());
        assert!(github(
            "https://git.acme.example/acme/shop",
            Some("git.acme.example")
        )
        .is_some());
        assert!(github("https://git.acme.example/acme/shop", None).is_none());
    }

    #[test]
    fn console_and_configured_links() {
        assert!(
            cloud_console("https://eu-west-1.console.aws.amazon.com/ecs/v2/clusters").is_some()
        );
        assert!(cloud_console("https://portal.azure.com/#browse/x").is_some());
        assert!(cloud_console("https://evil.console.aws.amazon.com/").is_none());
        assert!(cloud_console("https://console.aws.amazon.com.evil.example/").is_none());
        assert_eq!(
            under("https://infisical.example/", &["projects", "a/../b#c"])
                .map(Checked::into_string),
            Some("https://infisical.example/projects/a%2F..%2Fb%23c".to_owned())
        );
        assert_eq!(under("http://infisical.example", &["x"]), None);
        assert_eq!(under("https://infisical.example/?q=", &["x"]), None);
    }

    #[test]
    fn segments_cannot_add_paths_queries_or_fragments() {
        assert_eq!(segment("shop-api_1.2~x"), "shop-api_1.2~x");
        assert_eq!(segment("../x?y=1#z"), "..%2Fx%3Fy%3D1%23z");
        assert_eq!(segment("a b/é"), "a%20b%2F%C3%A9");
    }

    #[test]
    fn regions_are_shaped_like_aws_regions() {
        for ok in [
            "eu-west-1",
            "us-east-1",
            "ap-southeast-2",
            "us-gov-west-1",
            "il-central-1",
        ] {
            assert_eq!(aws_region(ok), Some(ok));
        }
        for bad in [
            "",
            "evil.example/x#",
            "eu-west",
            "EU-WEST-1",
            "eu-west-1.evil.example",
            "europe-west-1",
            "eu--1",
            "eu-west-123",
        ] {
            assert_eq!(aws_region(bad), None, "{bad:?}");
        }
    }
}
