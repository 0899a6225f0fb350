//! The PDF's fonts: DejaVu Sans and DejaVu Sans Bold (from the `dejavu` crate), which draw
//! Latin, Greek, Cyrillic, Armenian, Georgian, Hebrew and many symbols. Only the glyphs a
//! record uses are written into the file (subset by `subsetter`), as CID fonts addressed by
//! glyph, each with a map back to Unicode so the text can be searched and copied. A character
//! neither face has (CJK, most emoji) is drawn as the font's missing-glyph box and is left
//! out of the copied text; the HTML export shows it as written.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use pdf_writer::types::{CidFontType, FontFlags, SystemInfo, UnicodeCmap};
use pdf_writer::{Name, Pdf, Rect, Ref, Str};
use subsetter::GlyphRemapper;

/// A face and the bytes it was read from.
struct Face {
    data: &'static [u8],
    face: ttf_parser::Face<'static>,
    /// The PostScript name a PDF reader shows.
    name: &'static str,
}

impl Face {
    fn load(data: &'static [u8], name: &'static str) -> Self {
        // The crate's fonts are fixed data: a face that does not parse is a broken build,
        // which every test of the export shows at once.
        let face = ttf_parser::Face::parse(data, 0).expect("the DejaVu font parses");
        Self { data, face, name }
    }

    /// Font units to thousandths of an em.
    fn per_mille(&self, units: f32) -> f32 {
        units * 1000.0 / f32::from(self.face.units_per_em())
    }

    /// `c`'s glyph (0, the missing-glyph box, when the face has none). A tab, line feed or
    /// carriage return is a space.
    fn glyph(&self, c: char) -> u16 {
        let c = if matches!(c, '\t' | '\n' | '\r') {
            ' '
        } else {
            c
        };
        self.face.glyph_index(c).map_or(0, |g| g.0)
    }

    /// How far `glyph` advances the pen, in thousandths of an em.
    fn advance(&self, glyph: u16) -> f32 {
        let units = self
            .face
            .glyph_hor_advance(ttf_parser::GlyphId(glyph))
            .unwrap_or(0);
        self.per_mille(f32::from(units))
    }
}

static REGULAR: LazyLock<Face> =
    LazyLock::new(|| Face::load(dejavu::sans::regular(), "DejaVuSans"));
static BOLD: LazyLock<Face> = LazyLock::new(|| Face::load(dejavu::sans::bold(), "DejaVuSans-Bold"));

fn face(bold: bool) -> &'static Face {
    if bold {
        &BOLD
    } else {
        &REGULAR
    }
}

/// The width of `text` in points at `size`.
pub fn width(text: &str, size: f32, bold: bool) -> f32 {
    let face = face(bold);
    let em: f32 = text.chars().map(|c| face.advance(face.glyph(c))).sum();
    em / 1000.0 * size
}

/// Whether the PDF draws `c` with a glyph of its own (not the missing-glyph box).
pub fn draws(c: char, bold: bool) -> bool {
    face(bold).glyph(c) != 0
}

/// What one font of a document uses: its glyphs, renumbered for the subset (the new number
/// is the CID the page content shows), and the character each stands for.
#[derive(Default)]
pub struct Used {
    glyphs: GlyphRemapper,
    text: BTreeMap<u16, char>,
}

impl Used {
    /// `text` as the CIDs (two bytes each) that show it in this font, noting each glyph.
    pub fn encode(&mut self, text: &str, bold: bool) -> Vec<u8> {
        let face = face(bold);
        // The missing-glyph box is always glyph 0 of the subset too.
        self.glyphs.remap(0);
        let mut bytes = Vec::with_capacity(text.len() * 2);
        for c in text.chars() {
            let glyph = face.glyph(c);
            let cid = self.glyphs.remap(glyph);
            if glyph != 0 {
                let c = if c.is_whitespace() { ' ' } else { c };
                self.text.entry(cid).or_insert(c);
            }
            bytes.extend(cid.to_be_bytes());
        }
        bytes
    }

    /// Writes the font as `id` (a Type 0 font over a CID font of the used glyphs), with the
    /// objects it needs numbered from `next` on; answers the next free number.
    pub fn write(&self, pdf: &mut Pdf, id: Ref, bold: bool, next: i32) -> i32 {
        let face = face(bold);
        let [cid_font, descriptor, file, to_unicode, cid_map] =
            std::array::from_fn(|i| Ref::new(next + i as i32));
        // The subset, whose glyph numbers are the CIDs; should it fail, the whole face with
        // a map from each CID to the face's own glyph number.
        let subset = subsetter::subset(face.data, 0, &self.glyphs);
        if let Err(err) = &subset {
            tracing::warn!(error = %err, font = face.name, "subsetting a PDF font; embedding all of it");
        }
        let base = format!("{}+{}", subset_tag(&self.glyphs), face.name);
        let info = SystemInfo {
            registry: Str(b"Adobe"),
            ordering: Str(b"Identity"),
            supplement: 0,
        };
        pdf.type0_font(id)
            .base_font(Name(base.as_bytes()))
            .encoding_predefined(Name(b"Identity-H"))
            .descendant_font(cid_font)
            .to_unicode(to_unicode);
        let old_glyphs: Vec<u16> = self.glyphs.remapped_gids().collect();
        let mut cid = pdf.cid_font(cid_font);
        cid.subtype(CidFontType::Type2)
            .base_font(Name(base.as_bytes()))
            .system_info(info)
            .font_descriptor(descriptor)
            .default_width(face.advance(0));
        cid.widths()
            .consecutive(0, old_glyphs.iter().map(|&glyph| face.advance(glyph)));
        if subset.is_ok() {
            cid.cid_to_gid_map_predefined(Name(b"Identity"));
        } else {
            cid.cid_to_gid_map_stream(cid_map);
        }
        drop(cid);
        let bbox = face.face.global_bounding_box();
        let scaled = |units: i16| face.per_mille(f32::from(units));
        let mut flags = FontFlags::NON_SYMBOLIC;
        if bold {
            flags |= FontFlags::FORCE_BOLD;
        }
        pdf.font_descriptor(descriptor)
            .name(Name(base.as_bytes()))
            .flags(flags)
            .bbox(Rect::new(
                scaled(bbox.x_min),
                scaled(bbox.y_min),
                scaled(bbox.x_max),
                scaled(bbox.y_max),
            ))
            .italic_angle(0.0)
            .ascent(scaled(face.face.ascender()))
            .descent(scaled(face.face.descender()))
            .cap_height(scaled(
                face.face.capital_height().unwrap_or(face.face.ascender()),
            ))
            .stem_v(if bold { 140.0 } else { 80.0 })
            .font_file2(file);
        let data = match &subset {
            Ok(data) => data.as_slice(),
            Err(_) => face.data,
        };
        pdf.stream(file, data)
            .pair(Name(b"Length1"), data.len() as i32);
        if subset.is_err() {
            let map: Vec<u8> = old_glyphs.iter().flat_map(|g| g.to_be_bytes()).collect();
            pdf.stream(cid_map, &map);
        }
        let mut cmap = UnicodeCmap::new(Name(b"Tower-UTF16"), info);
        for (&cid, &c) in &self.text {
            cmap.pair(cid, c);
        }
        pdf.cmap(to_unicode, &cmap.finish());
        next + 5
    }
}

/// The six capital letters a subset font's name starts with, from the glyphs it holds (so
/// two subsets of one face in different files are told apart, and the same one is named
/// alike).
fn subset_tag(glyphs: &GlyphRemapper) -> String {
    let mut hash: u32 = 2_166_136_261;
    for glyph in glyphs.remapped_gids() {
        for byte in glyph.to_be_bytes() {
            hash = (hash ^ u32::from(byte)).wrapping_mul(16_777_619);
        }
    }
    (0..6)
        .map(|i| char::from(b'A' + ((hash >> (i * 5)) % 26) as u8))
        .collect()
}
