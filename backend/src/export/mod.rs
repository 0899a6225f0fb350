//! A release record exported for whoever asks later: a self-contained HTML page (no
//! external assets; prints well) and a PDF (searchable text, written by `pdf-writer` in
//! DejaVu Sans, embedded — see [`font`] — so no font files and no browser at run time). Both
//! draw the same [`outline`] of the record, so they say the same things in the same order.

mod font;

pub use font::draws;
use font::width;
use pdf_writer::{Content, Finish, Name, Pdf, Rect, Ref, Str, TextStr};
use tower_shared::records::{Record, Risk};

/// One block of an exported record.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    Title(String),
    Heading(String),
    Para(String),
    /// A table: its header, its rows, and each column's share of the width.
    Table {
        head: Vec<String>,
        rows: Vec<Vec<String>>,
        widths: Vec<f32>,
    },
}

fn table(head: &[&str], rows: Vec<Vec<String>>, widths: &[f32]) -> Block {
    Block::Table {
        head: head.iter().map(|h| (*h).to_owned()).collect(),
        rows,
        widths: widths.to_vec(),
    }
}

fn or_unknown(value: Option<&str>) -> String {
    value.map_or_else(|| "not known".to_owned(), str::to_owned)
}

fn verdict(passed: Option<bool>) -> &'static str {
    match passed {
        Some(true) => "passed",
        Some(false) => "failed",
        None => "not known",
    }
}

/// Points as the record shows them: one decimal.
fn points(value: f64) -> String {
    format!("{value:.1}")
}

/// What an exported record says, in order.
pub fn outline(record: &Record) -> Vec<Block> {
    let mut out = vec![Block::Title(format!(
        "Release record: {} {}",
        record.service, record.release
    ))];
    let prod = record.prod_at().map_or_else(
        || "Tower did not read when it reached prod".to_owned(),
        |at| format!("It reached prod at {}", at.to_rfc3339()),
    );
    out.push(Block::Para(format!(
        "{} of {}. {prod}; its confidence score is {} of 100.",
        record.image,
        record.service,
        points(record.confidence.score)
    )));

    out.push(Block::Heading("The release".to_owned()));
    let build = record.build.as_ref().map_or_else(
        || "no build Tower could see".to_owned(),
        |(run, outcome)| format!("{run} ({})", outcome.as_str()),
    );
    out.push(table(
        &["Field", "Value"],
        vec![
            vec!["Image".to_owned(), record.image.clone()],
            vec!["Version".to_owned(), or_unknown(record.version.as_deref())],
            vec!["Commit".to_owned(), or_unknown(record.commit.as_deref())],
            vec!["Digest".to_owned(), or_unknown(record.digest.as_deref())],
            vec!["Build".to_owned(), build],
        ],
        &[0.2, 0.8],
    ));

    out.push(Block::Heading("Pull requests that went in".to_owned()));
    match &record.pulls {
        None => out.push(Block::Para(
            "Not known: Tower could not compare this release with the one before it in prod."
                .to_owned(),
        )),
        Some(pulls) if pulls.is_empty() => out.push(Block::Para(
            "None: no pull request was merged since the release before it in prod.".to_owned(),
        )),
        Some(pulls) => out.push(table(
            &["#", "Title", "Author", "Reviewers"],
            pulls
                .iter()
                .map(|p| {
                    vec![
                        format!("#{}", p.number),
                        p.title.clone(),
                        or_unknown(p.author.as_deref()),
                        p.reviewers.as_ref().map_or_else(
                            || "not read".to_owned(),
                            |r| {
                                if r.is_empty() {
                                    "nobody".to_owned()
                                } else {
                                    r.join(", ")
                                }
                            },
                        ),
                    ]
                })
                .collect(),
            &[0.08, 0.52, 0.18, 0.22],
        )),
    }

    out.push(Block::Heading("Transitions".to_owned()));
    out.push(table(
        &["Environment", "Arrived", "After the step before"],
        record
            .transitions
            .iter()
            .map(|t| {
                vec![
                    t.environment.clone(),
                    t.arrived_at
                        .map_or_else(|| "not known".to_owned(), |at| at.to_rfc3339()),
                    t.after_seconds.map_or_else(
                        || "not known".to_owned(),
                        tower_shared::time::compact_duration,
                    ),
                ]
            })
            .collect(),
        &[0.25, 0.45, 0.3],
    ));

    out.push(Block::Heading("Gates".to_owned()));
    out.push(table(
        &["Gate", "Verdict", "Detail"],
        record
            .gates
            .iter()
            .map(|g| {
                vec![
                    g.name.clone(),
                    verdict(g.passed).to_owned(),
                    g.detail.clone(),
                ]
            })
            .collect(),
        &[0.42, 0.13, 0.45],
    ));

    out.push(Block::Heading("Evidence".to_owned()));
    match &record.evidence {
        None => out.push(Block::Para(
            "None found: Tower read no signature, provenance, SBOM or transparency log entry for this image."
                .to_owned(),
        )),
        Some(e) => {
            out.push(Block::Para(e.summary.clone()));
            let found = |yes: bool| if yes { "found" } else { "absent" }.to_owned();
            out.push(table(
                &["Piece", "Found"],
                vec![
                    vec!["Provenance".to_owned(), found(e.provenance)],
                    vec!["Signature".to_owned(), found(e.signature)],
                    vec!["SBOM".to_owned(), found(e.sbom)],
                    vec!["Transparency log entry".to_owned(), found(e.transparency)],
                ],
                &[0.5, 0.5],
            ));
        }
    }

    out.push(Block::Heading(format!(
        "Confidence score: {} of 100",
        points(record.confidence.score)
    )));
    out.push(Block::Para(
        "Each factor is read into a value from 0 to 1 and multiplied by its weight; the score is the sum of the points (docs/confidence.md)."
            .to_owned(),
    ));
    out.push(table(
        &["Factor", "What was read", "Value", "Weight", "Points"],
        record
            .confidence
            .factors
            .iter()
            .map(|f| {
                vec![
                    f.name.clone(),
                    f.read.clone(),
                    format!("{:.2}", f.value),
                    f.weight.to_string(),
                    points(f.points),
                ]
            })
            .collect(),
        &[0.17, 0.47, 0.12, 0.12, 0.12],
    ));

    out.push(Block::Heading("The human part".to_owned()));
    match &record.human {
        None => out.push(Block::Para("Not written yet.".to_owned())),
        Some(human) => {
            let risk = match human.risk {
                Risk::Low => "low",
                Risk::Medium => "medium",
                Risk::High => "high",
            };
            let signed = human.signed_off.as_ref().map_or_else(
                || "not signed off".to_owned(),
                |s| format!("{} at {}", s.by, s.at.to_rfc3339()),
            );
            out.push(table(
                &["Field", "Value"],
                vec![
                    vec!["Summary".to_owned(), human.summary.clone()],
                    vec!["Risk".to_owned(), risk.to_owned()],
                    vec!["How it was checked".to_owned(), human.checked.clone()],
                    vec!["Signed off".to_owned(), signed],
                ],
                &[0.25, 0.75],
            ));
        }
    }
    out
}

/// `text` safe inside HTML elements and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1b1f24;max-width:60rem;margin:2rem auto;padding:0 1rem}\
h1{font-size:1.6rem;margin:0 0 .5rem}h2{font-size:1.15rem;margin:1.6rem 0 .4rem;border-bottom:1px solid #d0d7de}\
table{border-collapse:collapse;width:100%;margin:.3rem 0}th,td{text-align:left;vertical-align:top;padding:.25rem .5rem;border-bottom:1px solid #d0d7de;overflow-wrap:anywhere}\
th{background:#f6f8fa}p{margin:.4rem 0;white-space:pre-wrap}\
@media print{body{margin:0;max-width:none;font-size:11px}h2{break-after:avoid}tr{break-inside:avoid}}";

/// The record as one self-contained HTML page.
pub fn html(record: &Record) -> String {
    let blocks = outline(record);
    let title = blocks
        .iter()
        .find_map(|b| match b {
            Block::Title(t) => Some(t.as_str()),
            _ => None,
        })
        .unwrap_or("Release record");
    let mut body = String::new();
    for block in &blocks {
        match block {
            Block::Title(t) => body.push_str(&format!("<h1>{}</h1>\n", escape(t))),
            Block::Heading(h) => body.push_str(&format!("<h2>{}</h2>\n", escape(h))),
            Block::Para(p) => body.push_str(&format!("<p>{}</p>\n", escape(p))),
            Block::Table { head, rows, .. } => {
                body.push_str("<table><thead><tr>");
                for h in head {
                    body.push_str(&format!("<th scope=\"col\">{}</th>", escape(h)));
                }
                body.push_str("</tr></thead><tbody>\n");
                for row in rows {
                    body.push_str("<tr>");
                    for cell in row {
                        body.push_str(&format!("<td>{}</td>", escape(cell)));
                    }
                    body.push_str("</tr>\n");
                }
                body.push_str("</tbody></table>\n");
            }
        }
    }
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body>\n{body}</body></html>\n",
        escape(title)
    )
}

/// `text` broken into lines no wider than `max` points (a word longer than a line is cut).
fn wrap(text: &str, size: f32, bold: bool, max: f32) -> Vec<String> {
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        for word in paragraph.split(' ') {
            let candidate = if line.is_empty() {
                word.to_owned()
            } else {
                format!("{line} {word}")
            };
            if width(&candidate, size, bold) <= max {
                line = candidate;
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            // A word wider than the line: cut it where it fills the line, between
            // characters, at least one character a line.
            let mut rest = word;
            while width(rest, size, bold) > max && rest.chars().nth(1).is_some() {
                let first = rest.chars().next().map_or(rest.len(), char::len_utf8);
                let cut = rest
                    .char_indices()
                    .map(|(at, c)| at + c.len_utf8())
                    .take_while(|&end| width(&rest[..end], size, bold) <= max)
                    .last()
                    .unwrap_or(first);
                lines.push(rest[..cut].to_owned());
                rest = &rest[cut..];
            }
            line = rest.to_owned();
        }
        lines.push(line);
    }
    lines
}

const PAGE_WIDTH: f32 = 595.0;
const PAGE_HEIGHT: f32 = 842.0;
const MARGIN: f32 = 50.0;
const REGULAR: Name<'static> = Name(b"F1");
const BOLD: Name<'static> = Name(b"F2");

/// Lays text out page by page.
struct Pages {
    done: Vec<Content>,
    page: Content,
    /// The baseline of the next line.
    y: f32,
    /// The glyphs each font shows.
    regular: font::Used,
    bold: font::Used,
}

impl Pages {
    fn new() -> Self {
        Self {
            done: Vec::new(),
            page: Content::new(),
            y: PAGE_HEIGHT - MARGIN,
            regular: font::Used::default(),
            bold: font::Used::default(),
        }
    }

    /// Room for `height` more points, on a new page if need be.
    fn room(&mut self, height: f32) {
        if self.y - height < MARGIN {
            let full = std::mem::replace(&mut self.page, Content::new());
            self.done.push(full);
            self.y = PAGE_HEIGHT - MARGIN;
        }
    }

    fn text(&mut self, x: f32, y: f32, text: &str, size: f32, bold: bool) {
        let used = if bold {
            &mut self.bold
        } else {
            &mut self.regular
        };
        let bytes = used.encode(text, bold);
        self.page
            .begin_text()
            .set_font(if bold { BOLD } else { REGULAR }, size)
            .next_line(x, y)
            .show(Str(&bytes))
            .end_text();
    }

    /// Wrapped lines of `text` across the page.
    fn lines(&mut self, text: &str, size: f32, bold: bool, gap_after: f32) {
        let leading = size * 1.35;
        for line in wrap(text, size, bold, PAGE_WIDTH - 2.0 * MARGIN) {
            self.room(leading);
            self.y -= leading;
            self.text(MARGIN, self.y, &line, size, bold);
        }
        self.y -= gap_after;
    }

    fn rule(&mut self, y: f32, gray: f32) {
        self.page
            .set_stroke_gray(gray)
            .set_line_width(0.5)
            .move_to(MARGIN, y)
            .line_to(PAGE_WIDTH - MARGIN, y)
            .stroke();
    }

    /// A table row: each cell wrapped in its column; the row kept on one page.
    fn row(&mut self, cells: &[String], widths: &[f32], bold: bool) {
        let size = 8.5;
        let leading = size * 1.3;
        let usable = PAGE_WIDTH - 2.0 * MARGIN;
        let wrapped: Vec<Vec<String>> = cells
            .iter()
            .zip(widths)
            .map(|(cell, w)| wrap(cell, size, bold, w * usable - 6.0))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1) as f32 * leading + 4.0;
        self.room(height);
        let top = self.y;
        let mut x = MARGIN;
        for (lines, w) in wrapped.iter().zip(widths) {
            for (i, line) in lines.iter().enumerate() {
                self.text(x, top - leading * (i as f32 + 1.0), line, size, bold);
            }
            x += w * usable;
        }
        self.y = top - height;
        self.rule(self.y + 1.5, if bold { 0.4 } else { 0.8 });
    }

    /// Every page, and the glyphs each font showed (regular, bold).
    fn finish(mut self) -> (Vec<Content>, [font::Used; 2]) {
        self.done.push(self.page);
        (self.done, [self.regular, self.bold])
    }
}

/// The record as a PDF: A4 pages of searchable text in DejaVu Sans.
pub fn pdf(record: &Record) -> Vec<u8> {
    let blocks = outline(record);
    let mut pages = Pages::new();
    for block in &blocks {
        match block {
            Block::Title(t) => pages.lines(t, 17.0, true, 6.0),
            Block::Heading(h) => {
                pages.room(40.0);
                pages.y -= 8.0;
                pages.lines(h, 12.5, true, 3.0);
            }
            Block::Para(p) => pages.lines(p, 9.5, false, 4.0),
            Block::Table { head, rows, widths } => {
                pages.row(head, widths, true);
                for row in rows {
                    pages.row(row, widths, false);
                }
                pages.y -= 4.0;
            }
        }
    }
    let (contents, [used_regular, used_bold]) = pages.finish();

    let mut pdf = Pdf::new();
    let catalog = Ref::new(1);
    let tree = Ref::new(2);
    let regular = Ref::new(3);
    let bold = Ref::new(4);
    let info = Ref::new(5);
    let first = 10;
    let page_ids: Vec<Ref> = (0..contents.len())
        .map(|i| Ref::new(first + 2 * i as i32))
        .collect();
    pdf.catalog(catalog).pages(tree);
    pdf.pages(tree)
        .kids(page_ids.iter().copied())
        .count(page_ids.len() as i32);
    for (i, content) in contents.into_iter().enumerate() {
        let id = page_ids[i];
        let stream = Ref::new(id.get() + 1);
        let mut page = pdf.page(id);
        page.media_box(Rect::new(0.0, 0.0, PAGE_WIDTH, PAGE_HEIGHT))
            .parent(tree)
            .contents(stream);
        let mut resources = page.resources();
        resources.fonts().pair(REGULAR, regular).pair(BOLD, bold);
        resources.finish();
        page.finish();
        pdf.stream(stream, &content.finish());
    }
    let next = first + 2 * page_ids.len() as i32;
    let next = used_regular.write(&mut pdf, regular, false, next);
    used_bold.write(&mut pdf, bold, true, next);
    let title = format!("Release record: {} {}", record.service, record.release);
    pdf.document_info(info)
        .title(TextStr(&title))
        .producer(TextStr("Tower"));
    pdf.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_broken_to_fit_and_long_words_cut() {
        let lines = wrap("aaa bbb ccc", 10.0, false, width("aaa bbb", 10.0, false));
        assert_eq!(lines, ["aaa bbb", "ccc"]);
        let long = "x".repeat(200);
        let cut = wrap(&long, 10.0, false, 100.0);
        assert!(cut.len() > 1);
        assert!(cut.iter().all(|l| width(l, 10.0, false) <= 100.0));
        assert_eq!(cut.concat(), long);
        assert_eq!(wrap("", 10.0, false, 100.0), [""]);
    }

    #[test]
    fn long_words_are_cut_between_characters_however_wide_they_are() {
        // Ends in a character of two bytes (and one of three): once cut inside it.
        for word in [
            "é".repeat(80),
            format!("{}é", "x".repeat(60)),
            "→".repeat(50),
        ] {
            let cut = wrap(&word, 10.0, false, 100.0);
            assert!(cut.len() > 1, "{word}");
            assert!(cut
                .iter()
                .all(|l| !l.is_empty() && width(l, 10.0, false) <= 100.0));
            assert_eq!(cut.concat(), word);
        }
        // A line narrower than one character still takes one a line.
        assert_eq!(wrap("éé", 10.0, false, 1.0), ["é", "é"]);
    }

    #[test]
    fn html_is_escaped_and_the_pdf_draws_scripts_beyond_latin() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        for c in ['—', 'é', '→', 'ß', 'Ω', 'Ж', 'ש', '✓', '€'] {
            assert!(draws(c, false) && draws(c, true), "{c}");
        }
        assert!(!draws('漢', false));
    }

    /// A record of `service` whose human part says `notes`.
    fn record(service: &str, notes: &str) -> Record {
        serde_json::from_value(serde_json::json!({
            "schema": tower_shared::records::SCHEMA, "service": service,
            "release": "1.0.0-aaaaaaa", "image": "ghcr.io/acme/shop:1.0.0-aaaaaaa",
            "transitions": [], "gates": [], "confidence": {"score": 0.0, "factors": []},
            "human": {"summary": notes, "risk": "low", "checked": notes},
        }))
        .expect("a record")
    }

    proptest::proptest! {
        /// Any text at all — any script, combining marks, controls, what the fonts lack —
        /// makes a PDF, wrapped without losing or cutting a character.
        #[test]
        fn any_unicode_makes_a_pdf(title in "\\PC{0,60}", notes in "(\\PC|\n){0,400}") {
            let lines = wrap(&notes, 9.5, false, 200.0);
            proptest::prop_assert_eq!(lines.concat().replace(' ', ""), notes.replace([' ', '\n'], ""));
            let pdf = pdf(&record(&title, &notes));
            proptest::prop_assert!(pdf.starts_with(b"%PDF-") && pdf.ends_with(b"%%EOF"));
        }
    }
}
