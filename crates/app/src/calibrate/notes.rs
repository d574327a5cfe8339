//! Comments and layout for a serialised machine file: notes gathered while the values are made,
//! each for a place in the document (a table, a value, an array), attached afterwards as
//! `toml_edit` decor. A note whose place is not in the document is an error, so that no
//! provenance comment is dropped unseen.

use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, Value};

use hetsim_core::error::Error;

/// A table or value of the document: keys and array indices from the root.
#[derive(Debug, Clone, Default)]
pub(super) struct Place(Vec<Step>);

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

impl Place {
    pub(super) fn key(&self, k: &str) -> Place {
        let mut p = self.clone();
        p.0.push(Step::Key(k.to_string()));
        p
    }

    pub(super) fn index(&self, i: usize) -> Place {
        let mut p = self.clone();
        p.0.push(Step::Index(i));
        p
    }
}

/// What goes where. Texts are plain lines; `# ` is added when attaching.
#[derive(Debug)]
enum Note {
    /// Comment lines above a table's header, after a blank line. Above a table that is not
    /// written they go to the next one.
    Before(String),
    /// A comment after a table's header, on its line.
    Header(String),
    /// A comment after a value, on its line.
    After(String),
    /// Comment lines below a value's line.
    LinesAfter(String),
    /// An array written one element per line, each with an optional comment after its comma.
    OnePerLine(Vec<Option<String>>),
    /// A float written as StarPU wrote it, when that text is a TOML float of the same value.
    FloatText(String),
}

/// The notes of a file, in document order, and its header.
#[derive(Debug, Default)]
pub(super) struct Notes {
    /// The lines of the header comment.
    pub(super) header: String,
    notes: Vec<(Place, Note)>,
}

impl Notes {
    pub(super) fn before(&mut self, at: Place, lines: impl Into<String>) {
        self.notes.push((at, Note::Before(lines.into())));
    }

    pub(super) fn header(&mut self, at: Place, comment: impl Into<String>) {
        self.notes.push((at, Note::Header(comment.into())));
    }

    pub(super) fn after(&mut self, at: Place, comment: impl Into<String>) {
        self.notes.push((at, Note::After(comment.into())));
    }

    pub(super) fn lines_after(&mut self, at: Place, lines: impl Into<String>) {
        self.notes.push((at, Note::LinesAfter(lines.into())));
    }

    pub(super) fn one_per_line(&mut self, at: Place, comments: Vec<Option<String>>) {
        self.notes.push((at, Note::OnePerLine(comments)));
    }

    pub(super) fn float_text(&mut self, at: Place, text: &str) {
        self.notes.push((at, Note::FloatText(text.to_string())));
    }

    /// Attach every note to the document. A note whose place is not in the document is a bug
    /// of this writer (its provenance would be lost), except `Before`, which moves on.
    pub(super) fn attach(self, doc: &mut DocumentMut) -> Result<(), Error> {
        doc.decor_mut()
            .set_prefix(format!("{}\n", comment_lines(&self.header)));
        // Comment blocks waiting for the next table, each ending with a newline.
        let mut pending: Vec<String> = Vec::new();
        for (place, note) in self.notes {
            let missing =
                || Error::Internal(format!("no {place:?} in the machine file for {note:?}"));
            match (resolve(doc, &place), &note) {
                (Some(Node::Table(t)), Note::Before(lines)) => {
                    pending.push(comment_lines(lines));
                    // A blank line, then the blocks, separated by blank lines.
                    let mut prefix = match t.decor().prefix().and_then(|p| p.as_str()) {
                        Some(blocks) => format!("{blocks}\n"),
                        None => "\n".to_string(),
                    };
                    prefix.push_str(&pending.join("\n"));
                    t.decor_mut().set_prefix(prefix);
                    pending.clear();
                }
                (None, Note::Before(lines)) => pending.push(comment_lines(lines)),
                (Some(Node::Table(t)), Note::Header(c)) => {
                    t.decor_mut().set_suffix(format!("  # {}", one_line(c)));
                }
                (Some(Node::Value(v)), Note::After(c)) => {
                    append_suffix(v, &format!("  # {}", one_line(c)));
                }
                (Some(Node::Value(v)), Note::LinesAfter(lines)) => {
                    let lines = comment_lines(lines);
                    append_suffix(v, &format!("\n{}", lines.trim_end_matches('\n')));
                }
                (Some(Node::Value(Value::Array(a))), Note::OnePerLine(comments)) => {
                    let comment = |i: usize| match comments.get(i) {
                        Some(Some(c)) => format!("  # {}", one_line(c)),
                        _ => String::new(),
                    };
                    for (i, v) in a.iter_mut().enumerate() {
                        let after_previous = if i == 0 {
                            String::new()
                        } else {
                            comment(i - 1)
                        };
                        v.decor_mut().set_prefix(format!("{after_previous}\n  "));
                        v.decor_mut().set_suffix("");
                    }
                    let last = if a.is_empty() {
                        String::new()
                    } else {
                        comment(a.len() - 1)
                    };
                    a.set_trailing_comma(true);
                    a.set_trailing(format!("{last}\n"));
                }
                (Some(Node::Value(v @ Value::Float(_))), Note::FloatText(text)) => {
                    let decor = v.decor().clone();
                    *v = starpu_float(text, v.as_float().unwrap_or(f64::NAN));
                    *v.decor_mut() = decor;
                }
                _ => return Err(missing()),
            }
        }
        if !pending.is_empty() {
            doc.set_trailing(format!("\n{}", pending.join("\n")));
        }
        Ok(())
    }
}

/// Text safe on one comment line: control characters (line breaks) become spaces.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|ch| if ch.is_control() { ' ' } else { ch })
        .collect()
}

/// Each line of `text` as a comment line (`#` alone for an empty one), each ending with a
/// newline.
fn comment_lines(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                "#\n".to_string()
            } else {
                format!("# {}\n", one_line(l))
            }
        })
        .collect()
}

fn append_suffix(v: &mut Value, more: &str) {
    let mut suffix = v
        .decor()
        .suffix()
        .and_then(|s| s.as_str())
        .unwrap_or("")
        .to_string();
    suffix.push_str(more);
    v.decor_mut().set_suffix(suffix);
}

/// A float for TOML: StarPU's text (`1.769472e+09`) when TOML reads it as the same value, else
/// the value in `toml_edit`'s notation.
fn starpu_float(text: &str, value: f64) -> Value {
    match text.parse::<Value>() {
        Ok(v @ Value::Float(_)) if v.as_float().is_some_and(|f| f.to_bits() == value.to_bits()) => {
            v
        }
        _ => Value::from(value),
    }
}

/// A table or a value of the document.
enum Node<'a> {
    Table(&'a mut Table),
    Tables(&'a mut ArrayOfTables),
    Value(&'a mut Value),
}

fn resolve<'a>(doc: &'a mut DocumentMut, place: &Place) -> Option<Node<'a>> {
    let mut node = Node::Table(doc.as_table_mut());
    for step in &place.0 {
        node = match (node, step) {
            (Node::Table(t), Step::Key(k)) => match t.get_mut(k)? {
                Item::Table(t) => Node::Table(t),
                Item::ArrayOfTables(a) => Node::Tables(a),
                Item::Value(v) => Node::Value(v),
                Item::None => return None,
            },
            (Node::Tables(a), Step::Index(i)) => Node::Table(a.get_mut(*i)?),
            (Node::Value(Value::Array(a)), Step::Index(i)) => Node::Value(a.get_mut(*i)?),
            (Node::Value(Value::InlineTable(t)), Step::Key(k)) => Node::Value(t.get_mut(k)?),
            _ => return None,
        };
    }
    Some(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_stay_as_written_when_toml_reads_the_same_value() {
        let shown = |t: &str, v: f64| starpu_float(t, v).to_string();
        assert_eq!(shown("1.769472e+09", 1.769472e9), "1.769472e+09");
        assert_eq!(shown("0.000000e+00", 0.0), "0.000000e+00");
        assert_eq!(shown("1e5", 1e5), "1e5");
        // Not TOML (C's "5." has no fractional digits): the value, in TOML's notation.
        assert_eq!(shown("5.", 5.0), "5.0");
        // Text that does not say the value it came with: the value.
        assert_eq!(shown("1.5", 2.5), "2.5");
        assert_eq!(shown("7", 7.0), "7.0");
    }

    fn small_file() -> DocumentMut {
        let text = "[machine]\nname = \"m\"\n[[links]]\nname = \"a\"\nbandwidth = \"1 GB/s\"\n\
                    [[routes]]\nsrc = \"A\"\ndst = \"B\"\nlinks = [\"a\", \"a\"]\n";
        let raw: hetsim_platform::machine::format::RawMachineFile = toml::from_str(text).unwrap();
        raw.to_document().unwrap()
    }

    #[test]
    fn notes_go_where_they_are_placed_and_blocks_above_missing_tables_move_on() {
        let mut doc = small_file();
        let root = Place::default();
        let mut notes = Notes {
            header: "h".into(),
            ..Notes::default()
        };
        notes.before(root.key("links").index(0), "one");
        notes.before(root.key("gpus").index(0), "absent");
        notes.before(root.key("routes").index(0), "two");
        notes.after(root.key("links").index(0).key("name"), "line 1");
        notes.header(root.key("routes").index(0), "line 2");
        notes.one_per_line(
            root.key("routes").index(0).key("links"),
            vec![Some("first".into()), None],
        );
        notes.lines_after(root.key("routes").index(0).key("src"), "below\nand below");
        notes.before(root.key("codelets").index(0), "end");
        notes.attach(&mut doc).unwrap();
        assert_eq!(
            doc.to_string(),
            "# h\n\n[machine]\nname = \"m\"\n\n# one\n[[links]]\nname = \"a\"  # line 1\n\
             bandwidth = \"1 GB/s\"\n\n# absent\n\n# two\n[[routes]]  # line 2\nsrc = \"A\"\n\
             # below\n# and below\ndst = \"B\"\nlinks = [\n  \"a\",  # first\n  \"a\",\n]\n\n\
             # end\n"
        );
    }

    #[test]
    fn a_note_without_its_place_is_an_error() {
        let links = Place::default().key("links");
        let error = |notes: Notes| notes.attach(&mut small_file()).unwrap_err().to_string();
        // No fourth link.
        let mut notes = Notes::default();
        notes.after(links.index(3).key("name"), "line 9");
        let e = error(notes);
        assert!(
            e.starts_with("internal error: no Place(") && e.contains("Index(3)"),
            "{e}"
        );
        // A link's name is a string, not a float.
        let mut notes = Notes::default();
        notes.float_text(links.index(0).key("name"), "1.0e+00");
        let e = error(notes);
        assert!(e.contains("FloatText(\"1.0e+00\")"), "{e}");
    }

    #[test]
    fn comments_are_single_lines_and_blocks_of_lines() {
        assert_eq!(one_line("a\nb\tc"), "a b c");
        assert_eq!(comment_lines("a\n\n  b"), "# a\n#\n#   b\n");
    }
}
