//! Quantities with units in machine and scenario files ("6.5 GB/s", "10 us", "5.6 GiB").
//!
//! Files write a quantity as a string with its unit ("63 GB/s"). A bare number (`bandwidth = 63`)
//! is refused with the units the field accepts, because nothing says whether 63 is in B/s or
//! GB/s; only zero, the same in every unit, may be written bare. Fields whose unit is part of
//! their documented name or format (SimGrid's XML, `bytes=` parameters) read bare numbers in SI
//! base units through [`check_number`] and [`parse_or_base`]. Every parser returns plain `f64`
//! in base units (bytes, seconds, bytes per second, flop per second); callers keep the unit in
//! their field names (`capacity_bytes`, `latency_s`, ...).
//!
//! Values outside a physically meaningful range ([`Kind::range`]: a bandwidth under 1 B/s, a
//! duration over an hour, ...) are refused with the range, so that no overflow, NaN or infinity
//! can reach a simulation.
//!
//! Decimal prefixes (k, M, G, T) are powers of 10 and binary prefixes (Ki, Mi, Gi, Ti) powers of
//! 2, as in the SI/IEC standards: "1 GB" is 10^9 bytes and "1 GiB" is 2^30 bytes. Bit rates
//! ("Gbit/s", "Gbps") are divided by 8. Matching is case-sensitive on purpose, because "Gbps"
//! (bits) and "GBps" (bytes) differ by a factor of 8.
//!
//! NaN, infinities and unknown units are always rejected; negative values are rejected unless the
//! caller uses a `*_signed` entry point. Zero is accepted here (a zero latency is legitimate);
//! callers that need a positive value, such as link bandwidths, check that themselves so they can
//! say why.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// What a quantity measures. Decides the accepted units and the wording of error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A size, in bytes.
    Bytes,
    /// A duration, in seconds.
    Seconds,
    /// A bandwidth, in bytes per second.
    BytesPerSec,
    /// A compute rate, in floating-point operations per second.
    FlopsPerSec,
}

impl Kind {
    /// "a size such as \"5.6 GiB\" or a number of bytes", used in every error about this kind.
    pub fn expectation(self) -> &'static str {
        match self {
            Kind::Bytes => "a size such as \"5.6 GiB\" or a number of bytes",
            Kind::Seconds => "a duration such as \"10 us\" or a number of seconds",
            Kind::BytesPerSec => "a bandwidth such as \"6.5 GB/s\" or a number of bytes per second",
            Kind::FlopsPerSec => {
                "a compute rate such as \"1030 Gflop/s\" or a number of flop per second"
            }
        }
    }

    /// The units this kind accepts, for error messages.
    pub fn known_units(self) -> &'static str {
        match self {
            Kind::Bytes => "B, kB, MB, GB, TB, KiB, MiB, GiB, TiB",
            Kind::Seconds => "s, ms, us, µs, ns",
            Kind::BytesPerSec => {
                "B/s, kB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s, Bps, kBps, MBps, GBps, \
                 TBps, KiBps, MiBps, GiBps, bit/s, kbit/s, Mbit/s, Gbit/s, Tbit/s, kbps, Mbps, \
                 Gbps, Tbps"
            }
            Kind::FlopsPerSec => "flop/s, kflop/s, Mflop/s, Gflop/s, Tflop/s, Pflop/s",
        }
    }

    /// The name of the SI base unit a bare number is read in.
    pub fn base_unit(self) -> &'static str {
        match self {
            Kind::Bytes => "B",
            Kind::Seconds => "s",
            Kind::BytesPerSec => "B/s",
            Kind::FlopsPerSec => "flop/s",
        }
    }

    /// The physically meaningful magnitudes of a non-zero quantity of this kind, in base units,
    /// with how they are written in messages: (smallest, largest, "text of the range").
    /// Beyond them a value is a typo or a unit mistake, and it would overflow or lose all
    /// precision in a simulation (a 1e-300 B/s link makes every transfer last longer than any
    /// `f64` date).
    pub fn range(self) -> (f64, f64, &'static str) {
        match self {
            Kind::Bytes => (1.0, 1.152921504606847e18, "from 1 B to 1 EiB"),
            Kind::Seconds => (1e-15, 3600.0, "from 1 fs to 1 hour"),
            Kind::BytesPerSec => (1.0, 1e15, "from 1 B/s to 1 PB/s"),
            Kind::FlopsPerSec => (1.0, 1e19, "from 1 flop/s to 10 Eflop/s"),
        }
    }

    /// An example of this kind written with its unit, for messages.
    fn example(self) -> &'static str {
        match self {
            Kind::Bytes => "\"5.6 GiB\"",
            Kind::Seconds => "\"10 us\"",
            Kind::BytesPerSec => "\"6.5 GB/s\"",
            Kind::FlopsPerSec => "\"1030 Gflop/s\"",
        }
    }
}

/// A quantity as written in a file: a bare number or a string with a unit. Read it with
/// [`RawQuantity::read`], which refuses a bare number other than zero.
#[derive(Debug, Clone, PartialEq)]
pub enum RawQuantity {
    /// A TOML integer or float. May be NaN or infinite: `toml` accepts `nan` and `inf`, and
    /// reading refuses them with a clear message.
    Number(f64),
    /// A string such as "6.5 GB/s".
    Text(String),
}

impl RawQuantity {
    /// The value in base units: a string with a unit, or a bare zero; non-negative, finite and
    /// in [`Kind::range`].
    pub fn read(&self, kind: Kind) -> Result<f64, UnitError> {
        self.read_impl(kind, false)
    }

    /// Like [`RawQuantity::read`], but a bare number is read in base units: for fields named
    /// after their unit (`bytes = 4096`).
    pub fn read_base(&self, kind: Kind) -> Result<f64, UnitError> {
        match self {
            RawQuantity::Number(v) => check_number(kind, *v),
            RawQuantity::Text(t) => parse_impl(kind, t, false, true),
        }
    }

    /// Like [`RawQuantity::read`], but negative values are accepted.
    pub fn read_signed(&self, kind: Kind) -> Result<f64, UnitError> {
        self.read_impl(kind, true)
    }

    fn read_impl(&self, kind: Kind, allow_negative: bool) -> Result<f64, UnitError> {
        match self {
            RawQuantity::Number(v) if *v == 0.0 => Ok(0.0),
            RawQuantity::Number(v) if v.is_nan() || v.is_infinite() => {
                check_value(kind, *v, &v.to_string(), allow_negative)
            }
            RawQuantity::Number(v) => Err(bare_number(kind, &v.to_string())),
            RawQuantity::Text(t) => parse_impl(kind, t, allow_negative, false),
        }
    }
}

impl<'de> Deserialize<'de> for RawQuantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RawQuantity;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string with a unit, such as \"6.5 GB/s\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawQuantity, E> {
                Ok(RawQuantity::Number(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawQuantity, E> {
                Ok(RawQuantity::Number(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawQuantity, E> {
                Ok(RawQuantity::Number(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawQuantity, E> {
                Ok(RawQuantity::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Written as read: a bare number, or the string with its unit.
impl Serialize for RawQuantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RawQuantity::Number(v) => s.serialize_f64(*v),
            RawQuantity::Text(t) => s.serialize_str(t),
        }
    }
}

/// "a bare number is ambiguous here": the error for a number written without its unit.
fn bare_number(kind: Kind, shown: &str) -> UnitError {
    UnitError {
        message: format!(
            "{shown} has no unit: write it with one, such as {} (units: {}); only 0 may be \
             written bare",
            kind.example(),
            kind.known_units()
        ),
    }
}

/// Why a quantity could not be read. The message says what was found and what was expected; the
/// caller adds the location (file, line, field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    /// Human-readable explanation.
    pub message: String,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UnitError {}

fn err(kind: Kind, found: &str, why: &str) -> UnitError {
    UnitError {
        message: format!("expected {}, found {found:?}: {why}", kind.expectation()),
    }
}

const KILO: f64 = 1e3;
const MEGA: f64 = 1e6;
const GIGA: f64 = 1e9;
const TERA: f64 = 1e12;
const PETA: f64 = 1e15;
const KIBI: f64 = 1024.0;
const MEBI: f64 = 1024.0 * 1024.0;
const GIBI: f64 = 1024.0 * 1024.0 * 1024.0;
const TEBI: f64 = 1024.0 * 1024.0 * 1024.0 * 1024.0;

/// Multiplier to the base unit for `unit`, or `None` if `kind` has no such unit.
fn factor(kind: Kind, unit: &str) -> Option<f64> {
    let f = match kind {
        Kind::Bytes => match unit {
            "B" => 1.0,
            "kB" => KILO,
            "MB" => MEGA,
            "GB" => GIGA,
            "TB" => TERA,
            "KiB" => KIBI,
            "MiB" => MEBI,
            "GiB" => GIBI,
            "TiB" => TEBI,
            _ => return None,
        },
        Kind::Seconds => match unit {
            "s" => 1.0,
            "ms" => 1e-3,
            // U+00B5 MICRO SIGN and U+03BC GREEK SMALL LETTER MU look the same; accept both.
            "us" | "µs" | "μs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        },
        Kind::BytesPerSec => match unit {
            "B/s" | "Bps" => 1.0,
            "kB/s" | "kBps" => KILO,
            "MB/s" | "MBps" => MEGA,
            "GB/s" | "GBps" => GIGA,
            "TB/s" | "TBps" => TERA,
            "KiB/s" | "KiBps" => KIBI,
            "MiB/s" | "MiBps" => MEBI,
            "GiB/s" | "GiBps" => GIBI,
            "TiB/s" | "TiBps" => TEBI,
            "bit/s" | "bps" => 1.0 / 8.0,
            "kbit/s" | "kbps" => KILO / 8.0,
            "Mbit/s" | "Mbps" => MEGA / 8.0,
            "Gbit/s" | "Gbps" => GIGA / 8.0,
            "Tbit/s" | "Tbps" => TERA / 8.0,
            _ => return None,
        },
        Kind::FlopsPerSec => return flops_factor(unit),
    };
    Some(f)
}

/// Flop rates are written in many spellings (Gflop/s, GFlop/s, GFLOP/s, Gflops, GFLOPS); the
/// prefix letter is case-sensitive (there is no ambiguity to fear here except m/M, and "mflop/s"
/// is rejected rather than guessed), the "flop" part is not.
fn flops_factor(unit: &str) -> Option<f64> {
    let (prefix, rest) = match unit.chars().next()? {
        'k' => (KILO, &unit[1..]),
        'M' => (MEGA, &unit[1..]),
        'G' => (GIGA, &unit[1..]),
        'T' => (TERA, &unit[1..]),
        'P' => (PETA, &unit[1..]),
        _ => (1.0, unit),
    };
    let rest = rest.to_ascii_lowercase();
    match rest.as_str() {
        "flop/s" | "flops" => Some(prefix),
        _ => None,
    }
}

/// Split "6.5 GB/s" into ("6.5", "GB/s"). The number is an optional sign, digits with at most one
/// decimal point, and an optional exponent; whatever follows (after optional spaces) is the unit.
fn split_number(text: &str) -> (&str, &str) {
    let b = text.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    // An exponent only if 'e' is followed by digits, so that a unit could never be eaten.
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    (&text[..i], text[i..].trim_start())
}

/// Check a bare number (already in base units): finite, and non-negative unless allowed.
fn check_value(
    kind: Kind,
    value: f64,
    shown: &str,
    allow_negative: bool,
) -> Result<f64, UnitError> {
    if value.is_nan() {
        return Err(err(kind, shown, "NaN is not a quantity"));
    }
    if value.is_infinite() {
        return Err(err(kind, shown, "the value must be finite"));
    }
    if value < 0.0 && !allow_negative {
        return Err(err(kind, shown, "the value must not be negative"));
    }
    // Signed quantities are coefficients (a regression's a and c), not physical magnitudes.
    let (lo, hi, range) = kind.range();
    if !allow_negative && value != 0.0 && !(lo..=hi).contains(&value) {
        return Err(err(
            kind,
            shown,
            &format!("out of the meaningful range ({range}, or 0)"),
        ));
    }
    Ok(value)
}

fn parse_impl(
    kind: Kind,
    text: &str,
    allow_negative: bool,
    bare_is_base: bool,
) -> Result<f64, UnitError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(err(kind, text, "the string is empty"));
    }
    // Rust's float parser would accept "nan", "inf" and "infinity"; say plainly why they are
    // refused instead of reporting an unknown unit.
    let lower = trimmed.trim_start_matches(['+', '-']).to_ascii_lowercase();
    if lower.starts_with("nan") {
        return Err(err(kind, text, "NaN is not a quantity"));
    }
    if lower.starts_with("inf") {
        return Err(err(kind, text, "the value must be finite"));
    }
    let (number, unit) = split_number(trimmed);
    if number.is_empty() || number == "+" || number == "-" {
        return Err(err(kind, text, "it does not start with a number"));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| err(kind, text, &format!("{number:?} is not a number")))?;
    let scale = if unit.is_empty() {
        if value != 0.0 && !bare_is_base {
            return Err(bare_number(kind, &format!("{trimmed:?}")));
        }
        1.0
    } else {
        factor(kind, unit).ok_or_else(|| {
            err(
                kind,
                text,
                &format!(
                    "unknown unit {unit:?} (known units: {})",
                    kind.known_units()
                ),
            )
        })?
    };
    // Overflow (e.g. "1e308 TB") yields infinity, which check_value refuses.
    check_value(kind, value * scale, text, allow_negative)
}

/// Parse a non-negative quantity of `kind` from a string with its unit ("6.5 GB/s"; a bare
/// "0" is accepted), returning it in base units.
pub fn parse(kind: Kind, text: &str) -> Result<f64, UnitError> {
    parse_impl(kind, text, false, false)
}

/// Like [`parse`], but negative values are accepted (for offsets and differences).
pub fn parse_signed(kind: Kind, text: &str) -> Result<f64, UnitError> {
    parse_impl(kind, text, true, false)
}

/// Like [`parse`], but a number without a unit is read in base units: for formats that
/// document it (SimGrid's platform XML, `bytes=` parameters).
pub fn parse_or_base(kind: Kind, text: &str) -> Result<f64, UnitError> {
    parse_impl(kind, text, false, true)
}

/// Check a bare number given in base units, where the format documents them (a column named
/// in bytes, SimGrid's XML): finite, non-negative and in [`Kind::range`].
pub fn check_number(kind: Kind, value: f64) -> Result<f64, UnitError> {
    check_value(kind, value, &value.to_string(), false)
}

/// Like [`check_number`], but negative values are accepted.
pub fn check_number_signed(kind: Kind, value: f64) -> Result<f64, UnitError> {
    check_value(kind, value, &value.to_string(), true)
}

/// A size in bytes: "5.6 GiB", "512 kB", "1024".
pub fn parse_bytes(text: &str) -> Result<f64, UnitError> {
    parse(Kind::Bytes, text)
}

/// A duration in seconds: "10 us", "175µs", "0.5".
pub fn parse_secs(text: &str) -> Result<f64, UnitError> {
    parse(Kind::Seconds, text)
}

/// A bandwidth in bytes per second: "6.5 GB/s", "40 Gbit/s", "6517450307.89 Bps".
pub fn parse_bytes_per_sec(text: &str) -> Result<f64, UnitError> {
    parse(Kind::BytesPerSec, text)
}

/// A compute rate in flop per second: "1030 Gflop/s", "14.9 TFlop/s".
pub fn parse_flops_per_sec(text: &str) -> Result<f64, UnitError> {
    parse(Kind::FlopsPerSec, text)
}

/// Format a value in base units with a readable prefix, for summaries: `1.5e9` bytes per second
/// prints as "1.500 GB/s". Decimal prefixes, so that the printed value matches how vendors and
/// StarPU's files state bandwidths.
pub fn format_si(value: f64, unit: &str) -> String {
    let abs = value.abs();
    let (scale, prefix) = if abs >= TERA {
        (TERA, "T")
    } else if abs >= GIGA {
        (GIGA, "G")
    } else if abs >= MEGA {
        (MEGA, "M")
    } else if abs >= KILO {
        (KILO, "k")
    } else {
        (1.0, "")
    };
    format!("{:.3} {prefix}{unit}", value / scale)
}

/// Format a size in bytes with binary prefixes ("5.249 GiB"), as memory sizes usually are.
pub fn format_bytes(bytes: f64) -> String {
    let abs = bytes.abs();
    let (scale, prefix) = if abs >= TEBI {
        (TEBI, "Ti")
    } else if abs >= GIBI {
        (GIBI, "Gi")
    } else if abs >= MEBI {
        (MEBI, "Mi")
    } else if abs >= KIBI {
        (KIBI, "Ki")
    } else {
        return format!("{bytes} B");
    };
    format!("{:.3} {prefix}B", bytes / scale)
}

/// Format a duration ("10.000 us", "1.500 ms", "0 s").
pub fn format_secs(secs: f64) -> String {
    let abs = secs.abs();
    if secs == 0.0 {
        "0 s".to_string()
    } else if abs >= 1.0 {
        format!("{secs:.3} s")
    } else if abs >= 1e-3 {
        format!("{:.3} ms", secs * 1e3)
    } else if abs >= 1e-6 {
        format!("{:.3} us", secs * 1e6)
    } else {
        format!("{:.3} ns", secs * 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-300)
    }

    #[test]
    fn bytes_decimal_and_binary_prefixes() {
        assert_eq!(parse_bytes("1 B").unwrap(), 1.0);
        assert_eq!(parse_bytes("2 kB").unwrap(), 2000.0);
        assert_eq!(parse_bytes("3 MB").unwrap(), 3e6);
        assert_eq!(parse_bytes("4 GB").unwrap(), 4e9);
        assert_eq!(parse_bytes("5 TB").unwrap(), 5e12);
        assert_eq!(parse_bytes("1 KiB").unwrap(), 1024.0);
        assert_eq!(parse_bytes("1 MiB").unwrap(), 1_048_576.0);
        assert_eq!(parse_bytes("1 GiB").unwrap(), 1_073_741_824.0);
        assert_eq!(parse_bytes("1 TiB").unwrap(), 1_099_511_627_776.0);
        assert!(close(
            parse_bytes("5.6 GiB").unwrap(),
            5.6 * 1_073_741_824.0
        ));
        assert_eq!(
            parse_or_base(Kind::Bytes, "5636554752").unwrap(),
            5_636_554_752.0
        );
    }

    #[test]
    fn whitespace_between_number_and_unit_is_optional() {
        assert_eq!(parse_bytes("512kB").unwrap(), 512e3);
        assert_eq!(parse_bytes("  512   kB ").unwrap(), 512e3);
        assert_eq!(parse_secs("10us").unwrap(), parse_secs("10 us").unwrap());
    }

    #[test]
    fn time_units() {
        assert_eq!(parse_secs("2 s").unwrap(), 2.0);
        assert!(close(parse_secs("175 ms").unwrap(), 0.175));
        assert!(close(parse_secs("10 us").unwrap(), 10e-6));
        assert!(close(parse_secs("10 µs").unwrap(), 10e-6));
        assert!(close(parse_secs("10 μs").unwrap(), 10e-6));
        assert!(close(parse_secs("7 ns").unwrap(), 7e-9));
        assert!(close(parse_secs("0.000010 s").unwrap(), 1e-5));
        assert!(close(parse_or_base(Kind::Seconds, "1e-5").unwrap(), 1e-5));
        assert_eq!(parse_secs("0").unwrap(), 0.0);
    }

    #[test]
    fn bandwidth_units() {
        assert!(close(parse_bytes_per_sec("6.5 GB/s").unwrap(), 6.5e9));
        assert!(close(parse_bytes_per_sec("6.5 GBps").unwrap(), 6.5e9));
        assert_eq!(parse_bytes_per_sec("100 B/s").unwrap(), 100.0);
        assert_eq!(parse_bytes_per_sec("100 Bps").unwrap(), 100.0);
        assert_eq!(parse_bytes_per_sec("3 kB/s").unwrap(), 3e3);
        assert_eq!(parse_bytes_per_sec("3 MB/s").unwrap(), 3e6);
        assert_eq!(parse_bytes_per_sec("3 MBps").unwrap(), 3e6);
        assert_eq!(parse_bytes_per_sec("1 KiB/s").unwrap(), 1024.0);
        assert_eq!(parse_bytes_per_sec("1 MiB/s").unwrap(), 1_048_576.0);
        assert_eq!(parse_bytes_per_sec("1 GiB/s").unwrap(), 1_073_741_824.0);
        assert_eq!(parse_bytes_per_sec("1 GiBps").unwrap(), 1_073_741_824.0);
        assert!(close(
            parse_bytes_per_sec("6517450307.894589Bps").unwrap(),
            6_517_450_307.894589
        ));
    }

    #[test]
    fn bit_rates_are_divided_by_eight() {
        assert_eq!(parse_bytes_per_sec("40 Gbit/s").unwrap(), 5e9);
        assert_eq!(parse_bytes_per_sec("40 Gbps").unwrap(), 5e9);
        assert_eq!(parse_bytes_per_sec("100 Mbps").unwrap(), 12.5e6);
        assert_eq!(parse_bytes_per_sec("8 bit/s").unwrap(), 1.0);
        // Case matters: "GBps" is bytes, "Gbps" is bits.
        assert_eq!(
            parse_bytes_per_sec("8 GBps").unwrap(),
            8.0 * parse_bytes_per_sec("8 Gbps").unwrap()
        );
    }

    #[test]
    fn flop_rate_spellings() {
        assert_eq!(parse_flops_per_sec("1030 Gflop/s").unwrap(), 1030e9);
        assert_eq!(parse_flops_per_sec("1030 GFlop/s").unwrap(), 1030e9);
        assert_eq!(parse_flops_per_sec("1030 GFLOPS").unwrap(), 1030e9);
        assert!(close(parse_flops_per_sec("14.9 Tflop/s").unwrap(), 14.9e12));
        assert_eq!(parse_flops_per_sec("2e9 flop/s").unwrap(), 2e9);
        assert_eq!(parse_flops_per_sec("5 Mflop/s").unwrap(), 5e6);
        assert_eq!(parse_or_base(Kind::FlopsPerSec, "2000000000").unwrap(), 2e9);
    }

    #[test]
    fn nan_and_infinity_are_refused() {
        for text in [
            "nan",
            "NaN",
            "nan GB/s",
            "-nan",
            "inf",
            "+inf GB/s",
            "infinity",
        ] {
            let e = parse_bytes_per_sec(text).unwrap_err();
            assert!(
                e.message.contains("NaN") || e.message.contains("finite"),
                "{text}: {e}"
            );
        }
        assert!(
            check_number(Kind::Seconds, f64::NAN)
                .unwrap_err()
                .message
                .contains("NaN")
        );
        assert!(
            check_number(Kind::Seconds, f64::INFINITY)
                .unwrap_err()
                .message
                .contains("finite")
        );
        // Overflowing the scale also makes an infinity.
        assert!(
            parse_bytes("1e308 TB")
                .unwrap_err()
                .message
                .contains("finite")
        );
    }

    #[test]
    fn negatives_are_refused_unless_allowed() {
        let e = parse_secs("-10 us").unwrap_err();
        assert!(e.message.contains("negative"), "{e}");
        assert!(close(
            parse_signed(Kind::Seconds, "-10 us").unwrap(),
            -10e-6
        ));
        assert!(check_number(Kind::Bytes, -1.0).is_err());
        assert_eq!(check_number_signed(Kind::Bytes, -1.0).unwrap(), -1.0);
    }

    #[test]
    fn unknown_unit_lists_what_was_expected() {
        let e = parse_bytes_per_sec("6.5 GX/s").unwrap_err();
        assert!(
            e.message.starts_with(
                "expected a bandwidth such as \"6.5 GB/s\" or a number of bytes per second"
            ),
            "{e}"
        );
        assert!(e.message.contains("unknown unit \"GX/s\""), "{e}");
        // A unit of the wrong kind is an unknown unit for this kind.
        assert!(
            parse_bytes("10 us")
                .unwrap_err()
                .message
                .contains("unknown unit")
        );
        assert!(
            parse_secs("10 GB")
                .unwrap_err()
                .message
                .contains("a duration")
        );
        assert!(parse_bytes("5 KB").is_err(), "KB is ambiguous and refused");
        assert!(parse_flops_per_sec("1 mflop/s").is_err());
    }

    #[test]
    fn malformed_numbers() {
        for text in ["", "   ", "GB", "-", "1.2.3 GB", "..5 s", "abc"] {
            assert!(parse_bytes(text).is_err(), "{text:?} should be refused");
        }
        let e = parse_bytes("GB").unwrap_err();
        assert!(e.message.contains("does not start with a number"), "{e}");
        let e = parse_bytes("1.2.3 GB").unwrap_err();
        assert!(e.message.contains("is not a number"), "{e}");
    }

    #[test]
    fn exponent_does_not_swallow_units() {
        assert_eq!(parse_bytes("2e3 B").unwrap(), 2000.0);
        assert_eq!(parse_bytes("2E+3 B").unwrap(), 2000.0);
        // "2 EB" is not a unit we know; it must not be read as "2e" followed by "B".
        assert!(parse_bytes("2EB").is_err());
    }

    /// `bandwidth = 63`: GB/s or B/s? A bare number is refused with the units the field
    /// accepts, in files (TOML numbers) and in strings; zero, the same in every unit, is not.
    #[test]
    fn a_bare_number_is_refused_with_the_units_accepted() {
        let e = RawQuantity::Number(63.0)
            .read(Kind::BytesPerSec)
            .unwrap_err();
        assert_eq!(
            e.message,
            "63 has no unit: write it with one, such as \"6.5 GB/s\" (units: B/s, kB/s, MB/s, \
             GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s, Bps, kBps, MBps, GBps, TBps, KiBps, MiBps, \
             GiBps, bit/s, kbit/s, Mbit/s, Gbit/s, Tbit/s, kbps, Mbps, Gbps, Tbps); only 0 may be \
             written bare"
        );
        let e = parse_secs("10").unwrap_err();
        assert!(e.message.starts_with("\"10\" has no unit"), "{e}");
        assert_eq!(RawQuantity::Number(0.0).read(Kind::Seconds).unwrap(), 0.0);
        assert_eq!(parse_bytes_per_sec("0").unwrap(), 0.0);
        // Where the field is named after its unit, base units are read.
        assert_eq!(
            RawQuantity::Number(4096.0).read_base(Kind::Bytes).unwrap(),
            4096.0
        );
        assert!(
            RawQuantity::Number(f64::NAN)
                .read(Kind::Seconds)
                .unwrap_err()
                .message
                .contains("NaN")
        );
    }

    /// Values no machine has are typos or unit slips: refused with the range, in both paths.
    #[test]
    fn values_outside_the_physical_range_are_refused_with_it() {
        let e = parse_bytes_per_sec("1e-300 B/s").unwrap_err();
        assert!(
            e.message
                .ends_with("out of the meaningful range (from 1 B/s to 1 PB/s, or 0)"),
            "{e}"
        );
        assert!(check_number(Kind::BytesPerSec, 5e-324).is_err());
        assert!(parse_bytes_per_sec("2 PB/s").is_err());
        assert_eq!(parse_bytes_per_sec("1 B/s").unwrap(), 1.0);
        let e = parse_secs("2 h").unwrap_err();
        assert!(e.message.contains("unknown unit"), "{e}");
        let e = parse_secs("3601 s").unwrap_err();
        assert!(e.message.contains("from 1 fs to 1 hour"), "{e}");
        assert!(parse_flops_per_sec("0.5 flop/s").is_err());
        assert!(parse_bytes("2 EB").is_err());
        // Signed quantities are regression coefficients: only finiteness is checked.
        assert_eq!(parse_signed(Kind::Seconds, "-1e-20 s").unwrap(), -1e-20);
    }

    #[test]
    fn formatting() {
        assert_eq!(format_si(6.5e9, "B/s"), "6.500 GB/s");
        assert_eq!(format_si(512.0, "B/s"), "512.000 B/s");
        assert_eq!(format_bytes(1_073_741_824.0), "1.000 GiB");
        assert_eq!(format_bytes(100.0), "100 B");
        assert_eq!(format_secs(10e-6), "10.000 us");
        assert_eq!(format_secs(0.0), "0 s");
        assert_eq!(format_secs(0.175), "175.000 ms");
    }
}
