//! Errors: bad input (exit status 2) versus internal failures (exit status 1).
//!
//! Every message about bad input names where the problem is (file, line, field) and what was
//! expected, so the user can fix it without reading the source.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in the user's input a problem was found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// The file, if the input came from one.
    pub file: Option<PathBuf>,
    /// 1-based line number, if known.
    pub line: Option<usize>,
    /// Dotted path of the field (`links[3].bandwidth`), if known.
    pub field: Option<String>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut wrote = false;
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            wrote = true;
        }
        if let Some(line) = self.line {
            write!(f, "{}line {line}", if wrote { ":" } else { "" })?;
            wrote = true;
        }
        if let Some(field) = &self.field {
            write!(f, "{}field `{field}`", if wrote { ": " } else { "" })?;
        }
        Ok(())
    }
}

/// A problem with the user's input: a file that cannot be read or parsed, a value out of range,
/// a reference to something that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// Where the problem is.
    pub location: Location,
    /// What is wrong and what was expected.
    pub message: String,
}

impl InputError {
    /// An error with a message and no location yet.
    pub fn new(message: impl Into<String>) -> Self {
        InputError {
            location: Location::default(),
            message: message.into(),
        }
    }

    /// Attach the file the input came from (keeps an already known file).
    pub fn in_file(mut self, file: impl AsRef<Path>) -> Self {
        if self.location.file.is_none() {
            self.location.file = Some(file.as_ref().to_path_buf());
        }
        self
    }

    /// Attach a 1-based line number (keeps an already known line).
    pub fn at_line(mut self, line: usize) -> Self {
        if self.location.line.is_none() {
            self.location.line = Some(line);
        }
        self
    }

    /// Attach the field path (keeps an already known field).
    pub fn at_field(mut self, field: impl Into<String>) -> Self {
        if self.location.field.is_none() {
            self.location.field = Some(field.into());
        }
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let loc = self.location.to_string();
        if loc.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{loc}: {}", self.message)
        }
    }
}

impl std::error::Error for InputError {}

/// Any error hetsim reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: exit status 2.
    #[error("{0}")]
    Input(#[from] InputError),
    /// A bug or an environment failure (cannot write output): exit status 1.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// The process exit status for this error: 2 for bad input, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input(_) => 2,
            Error::Internal(_) => 1,
        }
    }
}

/// Result with hetsim's error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Turn a byte offset in `text` into a 1-based line number.
pub fn line_of_offset(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Read a whole input file (a regular file of sane size; see [`crate::files`]).
pub use crate::files::read_input;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_formats_all_parts() {
        let e = InputError::new("expected a bandwidth")
            .in_file("m.toml")
            .at_line(7)
            .at_field("links[0].bandwidth");
        assert_eq!(
            e.to_string(),
            "m.toml:line 7: field `links[0].bandwidth`: expected a bandwidth"
        );
    }

    #[test]
    fn line_of_offset_counts_newlines() {
        let t = "a\nbb\nccc";
        assert_eq!(line_of_offset(t, 0), 1);
        assert_eq!(line_of_offset(t, 2), 2);
        assert_eq!(line_of_offset(t, 5), 3);
        assert_eq!(line_of_offset(t, 100), 3);
    }

    #[test]
    fn exit_codes() {
        assert_eq!(Error::from(InputError::new("x")).exit_code(), 2);
        assert_eq!(Error::Internal("x".into()).exit_code(), 1);
    }
}
