//! Request PRs: "Create <Kind> <name>", "Create <Kind> Resource <name>" or
//! "Create Resource <name>" in the cluster's tenants repo.

use super::model::ServiceKind;

/// What a request PR's title asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestTitle<'a> {
    /// The kind, when the title names one.
    pub kind: Option<ServiceKind>,
    pub name: &'a str,
}

/// Reads a request PR title; `None` for any other title.
pub fn parse_request_title(title: &str) -> Option<RequestTitle<'_>> {
    let words: Vec<&str> = title.split_whitespace().collect();
    let (&first, rest) = words.split_first()?;
    let (&name, middle) = rest.split_last()?;
    if first != "Create" || middle.is_empty() || middle.len() > 2 || !is_dns_label(name) {
        return None;
    }
    let mut kind = None;
    for (i, word) in middle.iter().enumerate() {
        match (ServiceKind::from_kind(word), *word) {
            (Some(k), _) if i == 0 && kind.is_none() => kind = Some(k),
            (None, "Resource") if i == middle.len() - 1 => {}
            _ => return None,
        }
    }
    Some(RequestTitle { kind, name })
}

/// A Kubernetes object name as Hangar services use them (RFC 1123 label).
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_titles() {
        let parse = |t| parse_request_title(t).map(|r| (r.kind, r.name));
        assert_eq!(
            parse("Create NodeJS shop"),
            Some((Some(ServiceKind::NodeJS), "shop"))
        );
        assert_eq!(
            parse("Create InfraService Resource rabbit"),
            Some((Some(ServiceKind::InfraService), "rabbit"))
        );
        assert_eq!(parse("Create Resource ledger-2"), Some((None, "ledger-2")));
        assert_eq!(parse("Create shop"), None);
        assert_eq!(parse("Create new thing"), None);
        assert_eq!(parse("Create Resource NodeJS shop"), None);
        assert_eq!(parse("Create NodeJS Shop"), None);
        assert_eq!(parse("Onboarding: re-sync shop"), None);
        assert_eq!(parse(""), None);
    }
}
