//! The trace formats, registered: each says its name (the command line's `--NAME FILE`), the
//! usual file extension, one line of help, and its options as its own serde type with
//! `deny_unknown_fields`. The command line reads [`FORMATS`] to offer a flag per format and
//! `--NAME-OPTION` per option, so a new format is a writer and an entry here.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};

use serde::Deserialize;
use serde::de::value::{Error as ValueError, MapDeserializer};

use hetsim_core::InputError;
pub use hetsim_core::options::{OptionDoc, OptionValues, field_names};
use hetsim_runtime::Observer;

use crate::{ChromeWriter, GanttGroup, GanttOptions, GanttRows, GanttWriter, PajeWriter};

/// A writer the registry creates: an observer of the run that completes its file at the end.
pub trait TraceWriter: Observer {
    /// Write out everything; the first I/O error if any.
    fn finish(self: Box<Self>) -> io::Result<()>;
}

impl<W: Write> TraceWriter for PajeWriter<W> {
    fn finish(self: Box<Self>) -> io::Result<()> {
        PajeWriter::finish(*self).map(drop)
    }
}

impl<W: Write> TraceWriter for ChromeWriter<W> {
    fn finish(self: Box<Self>) -> io::Result<()> {
        ChromeWriter::finish(*self).map(drop)
    }
}

impl<W: Write> TraceWriter for GanttWriter<W> {
    fn finish(self: Box<Self>) -> io::Result<()> {
        GanttWriter::finish(*self).map(drop)
    }
}

/// A format's options as given: option name → value (as written on the command line).
pub type TraceOptions = BTreeMap<String, String>;

/// Reads a format's options and makes its writer over `file` (buffered). The caller opened
/// the file, and decides what becomes of it once the writer is finished (the command writes to
/// a temporary file it renames into place: `hetsim_core::files::OutputFile`).
pub type CreateWriter = fn(File, &TraceOptions) -> Result<Box<dyn TraceWriter>, InputError>;

/// One registered trace format.
#[derive(Debug, Clone, Copy)]
pub struct TraceFormat {
    /// Its name, and the command line's flag (`--paje FILE`).
    pub name: &'static str,
    /// The usual extension of its files.
    pub extension: &'static str,
    /// One line: what it is and what opens it.
    pub help: &'static str,
    /// Its options (`--NAME-OPTION VALUE` on the command line).
    pub options: &'static [OptionDoc],
    /// Read its options (unknown ones refused) and make its writer over a file.
    pub create: CreateWriter,
    /// The option names its options type accepts (serde's fields), for tests.
    pub fields: fn() -> &'static [&'static str],
}

/// Every trace format, in the order help texts list them.
pub static FORMATS: &[TraceFormat] = &[
    TraceFormat {
        name: "paje",
        extension: "paje",
        help: "a Paje trace (ViTE, pj_dump, StarPU's Paje tools)",
        options: &[],
        create: |file, options| {
            read::<NoOptions>("paje", options)?;
            Ok(Box::new(PajeWriter::new(BufWriter::new(file))))
        },
        fields: field_names::<NoOptions>,
    },
    TraceFormat {
        name: "chrome",
        extension: "json",
        help: "a Chrome trace event JSON (Perfetto UI, chrome://tracing)",
        options: &[],
        create: |file, options| {
            read::<NoOptions>("chrome", options)?;
            Ok(Box::new(ChromeWriter::new(BufWriter::new(file))))
        },
        fields: field_names::<NoOptions>,
    },
    TraceFormat {
        name: "gantt",
        extension: "svg",
        help: "a Gantt chart of the run as SVG (one row per worker, transfers per link)",
        options: GANTT_OPTIONS,
        create: |file, options| {
            let o = read::<GanttChoices>("gantt", options)?;
            let opts = GanttOptions {
                rows: o.rows,
                group: o.group,
                ..GanttOptions::default()
            };
            Ok(Box::new(GanttWriter::with_options(
                BufWriter::new(file),
                opts,
            )))
        },
        fields: field_names::<GanttChoices>,
    },
];

/// The registered format called `name`.
pub fn format(name: &str) -> Option<&'static TraceFormat> {
    FORMATS.iter().find(|f| f.name == name)
}

/// The options of a format that takes none.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoOptions {}

/// The Gantt chart's options from the command line.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GanttChoices {
    #[serde(default)]
    rows: GanttRows,
    #[serde(default)]
    group: GanttGroup,
}

const GANTT_OPTIONS: &[OptionDoc] = &[
    OptionDoc {
        name: "rows",
        values: OptionValues::Choice(&["all", "busy"]),
        default: "all",
        help: "which workers get a row: all, or busy (only those that ran a task; the title \
               counts the others)",
    },
    OptionDoc {
        name: "group",
        values: OptionValues::Choice(&["none", "identical"]),
        default: "none",
        help: "identical: the CPU workers of one memory node share one taller row stacking how \
               many of them run each codelet over time; none: a row per worker",
    },
];

/// `format`'s options of type `O` from what was given.
fn read<'a, O: Deserialize<'a>>(format: &str, options: &'a TraceOptions) -> Result<O, InputError> {
    let de = MapDeserializer::<_, ValueError>::new(
        options.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    O::deserialize(de).map_err(|e| InputError::new(format!("options of the {format} trace: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_documents_the_options_its_type_takes() {
        for f in FORMATS {
            let documented: Vec<&str> = f.options.iter().map(|o| o.name).collect();
            assert_eq!((f.fields)(), documented, "{}", f.name);
            // The command line offers each option's words as its possible values.
            for o in f.options {
                assert!(
                    matches!(o.values, OptionValues::Choice(_)),
                    "{}.{}",
                    f.name,
                    o.name
                );
            }
            assert_eq!(format(f.name).map(|g| g.name), Some(f.name));
        }
    }

    #[test]
    fn options_are_read_and_strangers_refused() {
        let given = |kv: &[(&str, &str)]| -> TraceOptions {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let o: GanttChoices = read("gantt", &given(&[("rows", "busy")])).unwrap();
        assert_eq!((o.rows, o.group), (GanttRows::Busy, GanttGroup::None));
        let e = read::<GanttChoices>("gantt", &given(&[("rows", "some")])).unwrap_err();
        assert!(e.message.contains("unknown variant `some`"), "{e}");
        let e = read::<GanttChoices>("gantt", &given(&[("colour", "red")])).unwrap_err();
        assert!(
            e.message
                .contains("unknown field `colour`, expected `rows` or `group`"),
            "{e}"
        );
        let e = read::<NoOptions>("paje", &given(&[("rows", "busy")])).unwrap_err();
        assert!(e.message.contains("options of the paje trace"), "{e}");
    }
}
