//! Container image references, read once: `[registry[:port]/]path/name[:tag][@digest]`.
//!
//! Every place that needs an image's tag, digest, release name or commit asks here. The tag
//! follows the last `:` *after the last `/`*, so a registry's port (`registry:5000/shop`) is
//! never read as a tag, and a digest (`@sha256:…`) is never part of one.

/// An image reference in its parts. Built by [`Image::parse`]; never fails: a reference
/// without a tag or digest has `None` there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image<'a> {
    /// Everything before the tag and digest (`ghcr.io/acme/shop`).
    pub repository: &'a str,
    /// The tag (`1.4.0-3a8423b`), when there is one.
    pub tag: Option<&'a str>,
    /// The digest (`sha256:…`), when there is one.
    pub digest: Option<&'a str>,
}

impl<'a> Image<'a> {
    /// `reference` in its parts.
    pub fn parse(reference: &'a str) -> Self {
        let (named, digest) = match reference.split_once('@') {
            Some((named, digest)) => (named, Some(digest)),
            None => (reference, None),
        };
        let last = named.rfind('/').map_or(0, |slash| slash + 1);
        let (repository, tag) = match named[last..].rfind(':') {
            Some(colon) => (&named[..last + colon], Some(&named[last + colon + 1..])),
            None => (named, None),
        };
        Self {
            repository,
            tag: tag.filter(|t| !t.is_empty()),
            digest: digest.filter(|d| !d.is_empty()),
        }
    }

    /// The image's own name: the repository's last path segment (`shop`).
    pub fn name(&self) -> &'a str {
        self.repository
            .rsplit('/')
            .next()
            .unwrap_or(self.repository)
    }
}

/// `reference` without its digest: an image reads the same built (by digest) or deployed
/// (by tag).
pub fn without_digest(reference: &str) -> &str {
    reference.split('@').next().unwrap_or(reference)
}

/// `reference`'s tag, when it has one.
pub fn tag(reference: &str) -> Option<&str> {
    Image::parse(reference).tag
}

/// The image as `name:tag` (its last path segment, without a digest), as `kubectl` shows it.
pub fn name_and_tag(reference: &str) -> &str {
    let named = without_digest(reference);
    named.rsplit('/').next().unwrap_or(named)
}

/// What a page calls a release: the tag (`1.4.0-3a8423b`), or the reference without its
/// digest when there is no tag.
pub fn short(reference: &str) -> &str {
    tag(reference).unwrap_or_else(|| without_digest(reference))
}

/// A release's name in its record and branches: its image's tag, when the tag is one a file
/// and a branch may be named for ([`is_release_name`]).
pub fn release_name(reference: &str) -> Option<&str> {
    tag(reference).filter(|t| is_release_name(t))
}

/// Whether `name` may name a record's file and branches: letters, digits, `.`, `_`, `-`;
/// 1 to 128 long, not starting with `.` or `-`.
pub fn is_release_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && !name.starts_with(['.', '-'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A release tag by the platform's rule `<version>-<shortsha>` (the build's commit, 7 to 40
/// lowercase hex): `("1.4.0", "3a8423b")`. `None` for any other tag.
pub fn release_tag(reference: &str) -> Option<(&str, &str)> {
    let (version, sha) = tag(reference)?.rsplit_once('-')?;
    let hex = (7..=40).contains(&sha.len())
        && sha
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (hex && !version.is_empty()).then_some((version, sha))
}

/// The commit an image was built from, as its tag ends (`…:1.4.2-9f2c1ab`, `…:9f2c1ab`,
/// `…:v1.9f2c1ab`): the tag's last part after `-`, `.` or `_`, when it is 7 or more hex digits.
pub fn commit(reference: &str) -> Option<&str> {
    let tag = tag(reference)?;
    let tail = tag.rsplit(['-', '.', '_']).next().unwrap_or(tag);
    (tail.len() >= 7 && tail.bytes().all(|b| b.is_ascii_hexdigit())).then_some(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_port_is_never_a_tag() {
        let image = Image::parse("registry.local:5000/acme/shop");
        assert_eq!(image.repository, "registry.local:5000/acme/shop");
        assert_eq!(image.tag, None);
        assert_eq!(
            short("registry.local:5000/acme/shop"),
            "registry.local:5000/acme/shop"
        );
        let tagged = Image::parse("registry.local:5000/acme/shop:1.4.0-3a8423b");
        assert_eq!(tagged.tag, Some("1.4.0-3a8423b"));
        assert_eq!(tagged.name(), "shop");
    }

    #[test]
    fn a_digest_is_kept_apart_from_the_tag() {
        let reference = "ghcr.io/acme/shop:1.4.0-3a8423b@sha256:abc";
        let image = Image::parse(reference);
        assert_eq!(image.repository, "ghcr.io/acme/shop");
        assert_eq!(image.tag, Some("1.4.0-3a8423b"));
        assert_eq!(image.digest, Some("sha256:abc"));
        assert_eq!(without_digest(reference), "ghcr.io/acme/shop:1.4.0-3a8423b");
        let by_digest = Image::parse("ghcr.io/acme/shop@sha256:abc");
        assert_eq!(
            (by_digest.tag, by_digest.digest),
            (None, Some("sha256:abc"))
        );
        assert_eq!(short("ghcr.io/acme/shop@sha256:abc"), "ghcr.io/acme/shop");
    }

    #[test]
    fn commit_is_the_tags_trailing_hex() {
        let cases = [
            (
                "123.dkr.ecr.eu-west-1.amazonaws.com/shop:1.4.2-9f2c1ab",
                Some("9f2c1ab"),
            ),
            ("ghcr.io/acme/shop:9f2c1ab0d1", Some("9f2c1ab0d1")),
            ("registry:5000/shop:sha-0123abcd", Some("0123abcd")),
            ("registry:5000/shop", None),
            ("ghcr.io/acme/shop:latest", None),
            ("ghcr.io/acme/shop:1.2.3-abc", None),
            (
                "ghcr.io/acme/shop:1.4.2-9f2c1ab@sha256:586789aa",
                Some("9f2c1ab"),
            ),
        ];
        for (image, expected) in cases {
            assert_eq!(commit(image), expected, "{image}");
        }
    }

    #[test]
    fn release_tags_follow_the_version_and_short_sha_rule() {
        assert_eq!(
            release_tag("ghcr.io/acme/shop:1.4.0-3a8423b"),
            Some(("1.4.0", "3a8423b"))
        );
        assert_eq!(
            release_tag("registry:5000/acme/shop:2.0.0-rc.1-0123456789abcdef@sha256:ab"),
            Some(("2.0.0-rc.1", "0123456789abcdef"))
        );
        for other in [
            "ghcr.io/acme/shop:latest",
            "ghcr.io/acme/shop",
            "registry:5000/acme/shop",
            "ghcr.io/acme/shop:1.4.0-3A8423B",
            "ghcr.io/acme/shop:1.4.0-3a842",
            "ghcr.io/acme/shop:-3a8423b",
        ] {
            assert_eq!(release_tag(other), None, "{other}");
        }
        assert_eq!(
            release_name("ghcr.io/acme/shop:1.4.0-3a8423b"),
            Some("1.4.0-3a8423b")
        );
        assert_eq!(release_name("ghcr.io/acme/shop:.hidden"), None);
        assert_eq!(release_name("localhost:5000/shop"), None);
    }
}
