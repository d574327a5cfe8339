//! The models as data: each model registers ([`crate::MODELS`]) its name, one line of summary,
//! the parameters it takes ([`ParamSpec`]: name with units, type, required or defaulted, help)
//! and a function from checked parameter values ([`Params`]) to an [`Evaluation`] (named
//! figures with units, and notes). Front ends (`hetsim model`) list, check and evaluate from
//! the registry alone; the parameter tables live beside the models they describe.
//!
//! A parameter is checked when it is given (an unknown name or a value of the wrong type is an
//! error naming it) and when it is read (a required one missing is an error naming it). A
//! parameter of type [`ParamType::Path`] names a file; the front end reads it and hands its
//! text over ([`Params::set_file_text`]), so nothing here does I/O.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use hetsim_core::InputError;

/// What a parameter's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// A number.
    Real,
    /// A whole number >= 0.
    Count,
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// A file path.
    Path,
}

/// Whether a parameter must be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// It must be given.
    Required,
    /// It has this default.
    Default(&'static str),
    /// It may be left out (the help says what happens then).
    Optional,
}

/// One parameter of a model. A name containing `<k>` stands for a family: `l<k>_alpha_s` is
/// `l1_alpha_s`, `l2_alpha_s` ...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// The parameter's name, units included.
    pub name: &'static str,
    /// Its type.
    pub ty: ParamType,
    /// Required, defaulted or optional.
    pub need: Need,
    /// One line of help.
    pub help: &'static str,
}

/// A required parameter.
pub(crate) const fn req(name: &'static str, ty: ParamType, help: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        ty,
        need: Need::Required,
        help,
    }
}

/// A parameter with a default.
pub(crate) const fn def(
    name: &'static str,
    ty: ParamType,
    default: &'static str,
    help: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        ty,
        need: Need::Default(default),
        help,
    }
}

/// A parameter that may be left out.
pub(crate) const fn opt(name: &'static str, ty: ParamType, help: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        ty,
        need: Need::Optional,
        help,
    }
}

/// One registered model.
#[derive(Debug, Clone, Copy)]
pub struct ModelEntry {
    /// Its name (`hetsim model NAME`).
    pub name: &'static str,
    /// One line: what it predicts, from which paper and equations.
    pub summary: &'static str,
    /// Its parameters, in the order help texts list them.
    pub params: &'static [ParamSpec],
    /// The prediction from checked parameters.
    pub evaluate: fn(&Params) -> Result<Evaluation, InputError>,
}

/// A parameter value as given.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A number.
    Num(f64),
    /// Text: a word, a path, or a number not yet read.
    Text(String),
}

impl Value {
    /// As given: a number formatted by [`format_number`], text as it is.
    pub fn show(&self) -> String {
        match self {
            Value::Num(v) => format_number(*v),
            Value::Text(t) => t.clone(),
        }
    }
}

/// The parameters given for one evaluation of one model, each checked against its spec.
#[derive(Debug, Clone)]
pub struct Params {
    model: &'static ModelEntry,
    values: BTreeMap<String, Value>,
    /// The text of the files that [`ParamType::Path`] parameters name, or why it could not be
    /// read (reported if the model reads it).
    files: BTreeMap<String, Result<String, InputError>>,
    /// The parameters the model read, given or not ([`Params::unused`]).
    read: RefCell<BTreeSet<String>>,
}

/// The spec a key names, if any (`l3_alpha_s` matches `l<k>_alpha_s`, k = 3).
fn spec_for(specs: &'static [ParamSpec], key: &str) -> Option<(&'static ParamSpec, Option<u64>)> {
    for s in specs {
        if let Some((pre, post)) = s.name.split_once("<k>") {
            if let Some(mid) = key.strip_prefix(pre).and_then(|r| r.strip_suffix(post))
                && !mid.is_empty()
                && mid.bytes().all(|b| b.is_ascii_digit())
                && let Ok(k) = mid.parse::<u64>()
            {
                return Some((s, Some(k)));
            }
        } else if s.name == key {
            return Some((s, None));
        }
    }
    None
}

impl Params {
    /// No parameters yet, for `model`.
    pub fn new(model: &'static ModelEntry) -> Self {
        Params {
            model,
            values: BTreeMap::new(),
            files: BTreeMap::new(),
            read: RefCell::default(),
        }
    }

    /// The model these parameters are for.
    pub fn model(&self) -> &'static ModelEntry {
        self.model
    }

    /// Give `key` the value `value`, checking that the model takes it and that the value has
    /// its type. Errors name the key (in their field); a value of the wrong type, also
    /// `origin` (where it came from, such as `--param n=ten`; empty: nothing said).
    pub fn set(&mut self, key: &str, value: Value, origin: &str) -> Result<(), InputError> {
        let Some((spec, _)) = spec_for(self.model.params, key) else {
            let known: Vec<&str> = self.model.params.iter().map(|s| s.name).collect();
            return Err(InputError::new(format!(
                "unknown parameter `{key}` for `{}` (known: {})",
                self.model.name,
                known.join(", ")
            ))
            .at_field(key));
        };
        let value = check_type(spec, key, value).map_err(|e| {
            if origin.is_empty() {
                e
            } else {
                let message = format!("{} (from {origin})", e.message);
                InputError { message, ..e }
            }
        })?;
        self.files.remove(key);
        self.values.insert(key.to_string(), value);
        Ok(())
    }

    /// The given value of `key`, if any.
    pub fn given(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// The [`ParamType::Path`] parameters given whose file's text is not set yet: (key, path).
    pub fn files_to_read(&self) -> Vec<(String, String)> {
        self.values
            .iter()
            .filter(|(k, _)| {
                !self.files.contains_key(*k)
                    && spec_for(self.model.params, k).is_some_and(|(s, _)| s.ty == ParamType::Path)
            })
            .map(|(k, v)| (k.clone(), v.show()))
            .collect()
    }

    /// The text of the file that parameter `key` names, or the error reading it.
    pub fn set_file_text(&mut self, key: &str, text: Result<String, InputError>) {
        self.files.insert(key.to_string(), text);
    }

    fn raw(&self, key: &str) -> Option<Value> {
        self.read.borrow_mut().insert(key.to_string());
        if let Some(v) = self.values.get(key) {
            return Some(v.clone());
        }
        let spec = spec_for(self.model.params, key).map(|(s, _)| s)?;
        match spec.need {
            Need::Default(d) => Some(match spec.ty {
                ParamType::Real | ParamType::Count => Value::Num(d.parse().unwrap_or(f64::NAN)),
                _ => Value::Text(d.to_string()),
            }),
            _ => None,
        }
    }

    /// The error for a required parameter that was not given.
    pub fn missing(&self, key: &str) -> InputError {
        InputError::new(format!(
            "missing parameter `{key}` for `{}` (see `hetsim model {} --help-params`)",
            self.model.name, self.model.name
        ))
        .at_field(key)
    }

    /// A number, if given or defaulted.
    pub fn opt_real(&self, key: &str) -> Result<Option<f64>, InputError> {
        Ok(match self.raw(key) {
            Some(Value::Num(v)) => Some(v),
            Some(Value::Text(t)) => {
                return Err(InputError::new(format!("`{t}` is not a number")).at_field(key));
            }
            None => None,
        })
    }

    /// A number that must be there.
    pub fn real(&self, key: &str) -> Result<f64, InputError> {
        self.opt_real(key)?.ok_or_else(|| self.missing(key))
    }

    /// A whole number, if given or defaulted.
    pub fn opt_count(&self, key: &str) -> Result<Option<u64>, InputError> {
        self.opt_real(key)?.map(|v| to_count(key, v)).transpose()
    }

    /// A whole number that must be there.
    pub fn count(&self, key: &str) -> Result<u64, InputError> {
        self.opt_count(key)?.ok_or_else(|| self.missing(key))
    }

    /// Text, if given or defaulted.
    pub fn opt_text(&self, key: &str) -> Option<String> {
        self.raw(key).map(|r| r.show())
    }

    /// Text that must be there.
    pub fn text(&self, key: &str) -> Result<String, InputError> {
        self.opt_text(key).ok_or_else(|| self.missing(key))
    }

    /// The text of the file parameter `key` names, if it was given.
    pub fn file_text(&self, key: &str) -> Result<Option<&str>, InputError> {
        self.read.borrow_mut().insert(key.to_string());
        match (self.values.get(key), self.files.get(key)) {
            (None, _) => Ok(None),
            (Some(_), Some(Ok(text))) => Ok(Some(text)),
            (Some(_), Some(Err(e))) => Err(e.clone()),
            (Some(path), None) => {
                Err(InputError::new(format!("the file {} was not read", path.show())).at_field(key))
            }
        }
    }

    /// The largest k given for any parameter of a `<k>` family (0 if none).
    pub fn max_family_index(&self) -> u64 {
        self.values
            .keys()
            .filter_map(|key| spec_for(self.model.params, key).and_then(|(_, k)| k))
            .max()
            .unwrap_or(0)
    }

    /// The given parameters the model has not read (after an evaluation: those it ignored
    /// with the others given, such as a parameter of another case), in name order.
    pub fn unused(&self) -> Vec<&str> {
        let read = self.read.borrow();
        self.values
            .keys()
            .filter(|k| !read.contains(*k))
            .map(String::as_str)
            .collect()
    }

    /// The given parameters in name order, as given: (name, value).
    pub fn shown(&self) -> Vec<(String, String)> {
        self.values
            .iter()
            .map(|(k, v)| (k.clone(), v.show()))
            .collect()
    }

    /// The given parameters in name order.
    pub fn values(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }
}

fn to_count(key: &str, v: f64) -> Result<u64, InputError> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9.0e15 {
        Ok(v as u64)
    } else {
        Err(InputError::new(format!(
            "must be a whole number >= 0, got {}",
            format_number(v)
        ))
        .at_field(key))
    }
}

fn check_type(spec: &ParamSpec, key: &str, value: Value) -> Result<Value, InputError> {
    match (spec.ty, value) {
        (ParamType::Real | ParamType::Count, Value::Text(t)) => match t.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => check_type(spec, key, Value::Num(v)),
            _ => Err(InputError::new(format!("`{t}` is not a number")).at_field(key)),
        },
        (ParamType::Real, Value::Num(v)) => {
            if v.is_finite() {
                Ok(Value::Num(v))
            } else {
                Err(InputError::new("must be a finite number").at_field(key))
            }
        }
        (ParamType::Count, Value::Num(v)) => to_count(key, v).map(|_| Value::Num(v)),
        (ParamType::Choice(choices), v) => {
            let t = v.show();
            if choices.contains(&t.as_str()) {
                Ok(Value::Text(t))
            } else {
                Err(
                    InputError::new(format!("`{t}` is not one of {}", choices.join(", ")))
                        .at_field(key),
                )
            }
        }
        (ParamType::Path, v) => Ok(Value::Text(v.show())),
    }
}

/// A model's result: named figures with units, and notes (choices the model made).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evaluation {
    /// `(name, value, unit)`, headline first.
    pub terms: Vec<(String, f64, &'static str)>,
    /// `(name, text)`: the algorithm chosen, the case, where defaults came from.
    pub notes: Vec<(String, String)>,
}

impl Evaluation {
    /// Add a figure.
    pub fn term(&mut self, name: impl Into<String>, value: f64, unit: &'static str) {
        self.terms.push((name.into(), value, unit));
    }

    /// Add a note.
    pub fn note(&mut self, name: &str, text: impl Into<String>) {
        self.notes.push((name.to_string(), text.into()));
    }
}

/// A number as reports show it: integers below 10⁷ plainly, others with six significant
/// decimals or in exponent form.
pub fn format_number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if v.fract() == 0.0 && a < 1e7 {
        format!("{v:.0}")
    } else if (1e-3..1e6).contains(&a) {
        let s = format!("{v:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    } else {
        format!("{v:.6e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers() {
        assert_eq!(format_number(44000.0), "44000");
        assert_eq!(format_number(0.5), "0.5");
        assert_eq!(format_number(3.84e12), "3.840000e12");
        assert_eq!(format_number(1.5e-7), "1.500000e-7");
    }

    #[test]
    fn families_match_numbered_names() {
        const SPECS: &[ParamSpec] = &[req("l<k>_alpha_s", ParamType::Real, "")];
        assert_eq!(spec_for(SPECS, "l12_alpha_s").map(|s| s.1), Some(Some(12)));
        assert!(spec_for(SPECS, "l_alpha_s").is_none());
        assert!(spec_for(SPECS, "lx_alpha_s").is_none());
    }
}
