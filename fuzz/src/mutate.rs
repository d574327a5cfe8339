//! Structured mutations of a real input file: the seed is cut into tokens (bare words such as
//! numbers, keys and units, and quoted strings) and lines, and a few edits are drawn by
//! proptest: a token replaced by an extreme value, a line deleted, repeated or moved, text
//! inserted, the file truncated. Starting from files the parsers accept, most mutants get past
//! the syntax into the checks that matter.

use proptest::prelude::*;

/// Values that break naive code: NaN and infinities, zero and negative figures, integers past
/// `i64` and `u64`, sizes with extreme units, empty and huge strings.
pub const EXTREMES: &[&str] = &[
    "nan",
    "-nan",
    "inf",
    "-inf",
    "1e999",
    "-1e999",
    "0",
    "-0",
    "-1",
    "0.0",
    "1e-320",
    "1e308",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "-9223372036854775808",
    "\"\"",
    "\"nan\"",
    "\"0 B\"",
    "\"-5 GB/s\"",
    "\"1e308 GiB\"",
    "\"inf s\"",
    "\"1 ZiB\"",
    "\"../../../../etc/passwd\"",
    "\"/dev/zero\"",
    "[]",
    "{}",
    "true",
    "\"\u{1F600}\"",
    "1000000000",
    "65536",
];

/// One edit of the text.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Replace the token at this index (modulo the count) by an extreme value.
    Token(usize, usize),
    /// Replace the token at this index by arbitrary text.
    TokenText(usize, String),
    /// Delete the line at this index.
    DeleteLine(usize),
    /// Repeat the line at this index.
    RepeatLine(usize),
    /// Move the line at the first index before the second.
    MoveLine(usize, usize),
    /// Insert text at this byte fraction (per mille) of the file.
    Insert(u16, String),
    /// Keep only this fraction (per mille) of the file.
    Truncate(u16),
}

/// Spans of the tokens of `text`: runs of `[A-Za-z0-9_.+-]` and quoted strings.
pub fn tokens(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'+' | b'-');
    let mut v = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' || b[i] == b'\'' {
            let q = b[i];
            let mut j = i + 1;
            while j < b.len() && b[j] != q && b[j] != b'\n' {
                j += 1;
            }
            let end = (j + 1).min(b.len());
            v.push((i, end));
            i = end;
        } else if word(b[i]) {
            let mut j = i;
            while j < b.len() && word(b[j]) {
                j += 1;
            }
            v.push((i, j));
            i = j;
        } else {
            i += 1;
        }
    }
    v
}

fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Apply `edits` to `seed`.
pub fn apply(seed: &str, edits: &[Edit]) -> String {
    let mut text = seed.to_string();
    for e in edits {
        match e {
            Edit::Token(i, x) => replace_token(&mut text, *i, EXTREMES[x % EXTREMES.len()]),
            Edit::TokenText(i, t) => replace_token(&mut text, *i, t),
            Edit::DeleteLine(i) | Edit::RepeatLine(i) | Edit::MoveLine(i, _) => {
                let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
                if lines.is_empty() {
                    continue;
                }
                let k = i % lines.len();
                match e {
                    Edit::DeleteLine(_) => {
                        lines.remove(k);
                    }
                    Edit::RepeatLine(_) => lines.insert(k, lines[k]),
                    Edit::MoveLine(_, j) => {
                        let l = lines.remove(k);
                        let at = j % (lines.len() + 1);
                        lines.insert(at, l);
                    }
                    _ => unreachable!(),
                }
                text = lines.concat();
            }
            Edit::Insert(at, t) => {
                let i = floor_char(&text, text.len() * usize::from(*at) / 1000);
                text.insert_str(i, t);
            }
            Edit::Truncate(at) => {
                let i = floor_char(&text, text.len() * usize::from(*at) / 1000);
                text.truncate(i);
            }
        }
    }
    text
}

fn replace_token(text: &mut String, i: usize, with: &str) {
    let t = tokens(text);
    if t.is_empty() {
        return;
    }
    let (a, b) = t[i % t.len()];
    text.replace_range(a..b, with);
}

/// Text worth inserting: TOML and XML syntax, numbers, units, control characters.
pub fn snippet() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{0,12}",
        "[\\[\\]{}=\"',.<>/#\n\t]{1,4}",
        "[0-9eE.+-]{1,8}( [kMGT]?i?B(/s)?)?",
        Just("\n[[links]]\nname = \"x\"\n".to_string()),
        Just("<host id=\"CUDA9\"/>".to_string()),
        Just("\u{0}\u{7f}\u{feff}".to_string()),
    ]
}

/// A few edits (1 to `max`).
pub fn edits(max: usize) -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        6 => (any::<usize>(), any::<usize>()).prop_map(|(i, x)| Edit::Token(i, x)),
        2 => (any::<usize>(), snippet()).prop_map(|(i, t)| Edit::TokenText(i, t)),
        1 => any::<usize>().prop_map(Edit::DeleteLine),
        1 => any::<usize>().prop_map(Edit::RepeatLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Edit::MoveLine(i, j)),
        1 => (0u16..=1000, snippet()).prop_map(|(a, t)| Edit::Insert(a, t)),
        1 => (0u16..=1000).prop_map(Edit::Truncate),
    ];
    proptest::collection::vec(edit, 1..=max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_words_and_quoted_strings() {
        let t = "a = \"1 GiB\"\nbw=6e9 # x";
        let got: Vec<&str> = tokens(t).iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(got, ["a", "\"1 GiB\"", "bw", "6e9", "x"]);
        assert_eq!(
            apply(t, &[Edit::Token(3, 4)]),
            "a = \"1 GiB\"\nbw=1e999 # x"
        );
        assert_eq!(apply(t, &[Edit::DeleteLine(0)]), "bw=6e9 # x");
    }
}
