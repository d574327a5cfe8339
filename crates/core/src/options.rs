//! What registered components (schedulers, trace formats) say about their options, for help
//! texts, documentation and error messages. The options themselves are each component's own
//! serde type with `deny_unknown_fields`; [`field_names`] reads a type's fields, so a test can
//! check that a component documents exactly the options its type accepts.

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// What values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionValues {
    /// A finite number ≥ 0.
    NonNegative,
    /// `true` or `false`.
    Bool,
    /// One of these words.
    Choice(&'static [&'static str]),
}

impl OptionValues {
    /// How help texts and docs show it: `number >= 0`, `true|false`, `all|busy`.
    pub fn describe(self) -> String {
        match self {
            OptionValues::NonNegative => "number >= 0".to_string(),
            OptionValues::Bool => "true|false".to_string(),
            OptionValues::Choice(c) => c.join("|"),
        }
    }
}

/// One option of a registered component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionDoc {
    /// Its name, as a key of the component's options.
    pub name: &'static str,
    /// What it takes.
    pub values: OptionValues,
    /// Its default, as it would be written.
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
}

/// The field names serde's derive gives `T` (a struct): what a table of `T`'s options may
/// contain. Empty for a type that is not a struct.
pub fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields = None;
    // The probe fails by design once it has seen the fields.
    let _ = T::deserialize(FieldProbe(&mut fields));
    fields.unwrap_or(&[])
}

/// A deserializer that records the fields a struct asks for and deserializes nothing.
struct FieldProbe<'a>(&'a mut Option<&'static [&'static str]>);

#[derive(Debug)]
struct Probed;

impl std::fmt::Display for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("fields probed")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Probed
    }
}

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = Probed;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Probed> {
        *self.0 = Some(fields);
        Err(Probed)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Probed> {
        Err(Probed)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Two {
        alpha: f64,
        #[serde(rename = "ready-first")]
        ready_first: bool,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct NoFields {}

    #[test]
    fn probes_the_fields_serde_reads() {
        assert_eq!(field_names::<Two>(), ["alpha", "ready-first"]);
        assert!(field_names::<NoFields>().is_empty());
        assert!(field_names::<f64>().is_empty());
    }

    #[test]
    fn values_are_described() {
        assert_eq!(
            OptionValues::Choice(&["all", "busy"]).describe(),
            "all|busy"
        );
        assert_eq!(OptionValues::Bool.describe(), "true|false");
    }
}
