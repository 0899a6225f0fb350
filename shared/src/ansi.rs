//! ANSI colours in a log line, as build tools print them: a line split into runs of text,
//! each with the classes its SGR codes (`ESC [ … m`) give — bold (`b`) and one of eight
//! colours (`c0`…`c7`, the bright 90–97 read as their plain 30–37). Other escape sequences
//! (cursor moves, erasing) are dropped; a run with no class is plain text.

/// One run of a line: its classes (space-separated, empty for plain) and its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run<'a> {
    pub class: &'static str,
    pub text: &'a str,
}

/// Every class a run can have: plain, bold, a colour, or bold and a colour.
const CLASSES: [[&str; 9]; 2] = [
    ["", "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"],
    [
        "b", "b c0", "b c1", "b c2", "b c3", "b c4", "b c5", "b c6", "b c7",
    ],
];

/// What the SGR codes so far have set.
#[derive(Clone, Copy, Default)]
struct Style {
    bold: bool,
    /// 1 + colour (0 for the default colour).
    colour: usize,
}

impl Style {
    fn class(self) -> &'static str {
        CLASSES[usize::from(self.bold)][self.colour]
    }

    /// Applies the `;`-separated codes of one `ESC [ … m`.
    fn apply(&mut self, codes: &str) {
        for code in codes.split(';') {
            match code.parse::<usize>().unwrap_or(0) {
                0 => *self = Style::default(),
                1 => self.bold = true,
                22 => self.bold = false,
                c @ 30..=37 => self.colour = c - 29,
                c @ 90..=97 => self.colour = c - 89,
                39 => self.colour = 0,
                _ => {}
            }
        }
    }
}

/// `line`'s runs of text in order, escape sequences left out; empty runs are skipped.
pub fn runs(line: &str) -> Vec<Run<'_>> {
    let mut out = Vec::new();
    let mut style = Style::default();
    let mut rest = line;
    while let Some(at) = rest.find('\x1b') {
        if at > 0 {
            out.push(Run {
                class: style.class(),
                text: &rest[..at],
            });
        }
        let escape = &rest[at + 1..];
        // `ESC [` parameters, then one final byte in `@`..`~`.
        let Some(params) = escape.strip_prefix('[') else {
            // Another escape (`ESC`, intermediates ` `..`/`, one final character): dropped.
            let after = escape.trim_start_matches(|c: char| (' '..='/').contains(&c));
            rest = after
                .get(after.chars().next().map_or(0, char::len_utf8)..)
                .unwrap_or("");
            continue;
        };
        match params.find(|c: char| ('@'..='~').contains(&c)) {
            Some(end) => {
                if params.as_bytes()[end] == b'm' {
                    style.apply(&params[..end]);
                }
                rest = &params[end + 1..];
            }
            None => rest = "",
        }
    }
    if !rest.is_empty() {
        out.push(Run {
            class: style.class(),
            text: rest,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pairs(line: &str) -> Vec<(&'static str, &str)> {
        runs(line).iter().map(|r| (r.class, r.text)).collect()
    }

    #[test]
    fn colours_and_bold_become_classes() {
        assert_eq!(
            pairs("test a ... \x1b[32mok\x1b[0m"),
            [("", "test a ... "), ("c2", "ok")]
        );
        assert_eq!(
            pairs("\x1b[1;91mFAILED\x1b[22m still red\x1b[39m plain"),
            [("b c1", "FAILED"), ("c1", " still red"), ("", " plain")]
        );
        assert_eq!(
            pairs("\x1b[1m[lint] starting\x1b[0m"),
            [("b", "[lint] starting")]
        );
    }

    #[test]
    fn other_escapes_are_dropped_and_plain_text_is_kept() {
        assert_eq!(pairs("50%\x1b[2K\x1b[1Gdone"), [("", "50%"), ("", "done")]);
        assert_eq!(pairs("no colour here"), [("", "no colour here")]);
        assert_eq!(pairs("cut short \x1b[3"), [("", "cut short ")]);
        assert_eq!(pairs("\x1b"), []);
        assert_eq!(pairs("\x1b(Bé"), [("", "é")]);
        assert!(pairs("").is_empty());
    }

    proptest! {
        /// Whatever the line, its runs are its text without escape sequences, in order,
        /// and nothing panics.
        #[test]
        fn runs_keep_every_character_that_is_not_an_escape(
            words in proptest::collection::vec("[a-z é]{0,6}", 0..6),
            codes in proptest::collection::vec("(0|1|22|3[0-9]|9[0-7]|39)(;(1|3[0-7]))?", 0..6),
        ) {
            let mut line = String::new();
            for (k, word) in words.iter().enumerate() {
                line.push_str(word);
                if let Some(code) = codes.get(k) {
                    line.push_str(&format!("\x1b[{code}m"));
                }
            }
            let text: String = runs(&line).iter().map(|r| r.text).collect();
            prop_assert_eq!(text, words.concat());
        }

        #[test]
        fn any_text_is_read_without_panicking(line in "\\PC{0,40}") {
            let _ = runs(&line);
        }
    }
}
