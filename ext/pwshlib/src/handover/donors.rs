//! Strings already made in Ruby, passed on as those very objects where a
//! converted hash holds their text unchanged, as pwshlib 2.x passed them
//! (its `select` of `name_hash`, its re-keyed DSC answer, `name` given
//! back): fewer objects made per resource, and fewer that Puppet keeps.

use magnus::{prelude::*, r_hash::ForEach, RHash, RString, Ruby, Value as RValue};
use pwshlib_core::{Map, Value};

use super::matching::text_is;
use crate::convert::map_to_ruby_with;
use crate::error::BindingResult;

/// Where a conversion finds a String value already made in Ruby.
///
/// A `Donors` holds Ruby values, so it lives on the machine stack only
/// (a local, never boxed): the collector scans the stack and pins what it
/// finds there.
#[derive(Default)]
pub struct Donors {
    /// A hash whose equal String under the same key is passed on.
    same_key: Option<RHash>,
    /// A name_hash whose equal `name` String is passed on.
    name_from: Option<RHash>,
    /// A DSC answer's Strings, by the property they came under.
    dsc_answer: Option<DscAnswerStrings>,
}

impl Donors {
    /// Equal Strings of `hash` (if any), under the same key.
    pub fn same_key(hash: Option<RHash>) -> Self {
        Donors {
            same_key: hash,
            ..Donors::default()
        }
    }

    /// What pwshlib 2.x's `invoke_get_method` returned: the Strings of
    /// `answer`, a DSC answer as `invoke_dsc_resource` gives it (String
    /// keys, PowerShell's casing), each under the attribute its property
    /// becomes (`Ensure` under `dsc_ensure`), and `name` from `name_hash`.
    pub fn get_result(answer: Option<RHash>, name_hash: Option<RHash>) -> BindingResult<Self> {
        Ok(Donors {
            same_key: None,
            name_from: name_hash,
            dsc_answer: answer.map(DscAnswerStrings::of).transpose()?,
        })
    }

    /// `map` for Ruby, passing on the equal Strings these donors hold.
    pub fn convert(&mut self, ruby: &Ruby, map: &Map) -> BindingResult<RHash> {
        map_to_ruby_with(ruby, map, |key, key_value, text| {
            self.string_for(ruby, key, key_value, text)
        })
    }

    fn string_for(
        &mut self,
        ruby: &Ruby,
        key: &Value,
        key_value: RValue,
        text: &str,
    ) -> Option<RValue> {
        let name = key.key_name();
        if let (Some(answer), Some(name)) = (self.dsc_answer.as_mut(), name) {
            if let Some(found) = answer.take(ruby, name, text) {
                return Some(found.as_value());
            }
        }
        let donor = match self.name_from {
            Some(name_hash) if name == Some("name") => name_hash,
            _ => self.same_key?,
        };
        // A lookup by a Symbol or String key hashes and compares in C.
        donor.get(key_value).filter(|given| {
            RString::from_value(*given).is_some_and(|string| text_is(ruby, string, text))
        })
    }
}

/// `map` for Ruby, with each String value that `donor` (when there is one)
/// holds, equal, under the same key passed as that very String.
pub fn map_to_ruby_reusing(ruby: &Ruby, map: &Map, donor: Option<RHash>) -> BindingResult<RHash> {
    Donors::same_key(donor).convert(ruby, map)
}

/// How many String entries of a DSC answer are offered; an answer has one
/// per property of its resource, and a property beyond these is made anew.
const DSC_ANSWER_STRINGS: usize = 48;

/// The String-valued entries of a DSC answer, each offered once. On the
/// stack only, inside a [`Donors`].
struct DscAnswerStrings {
    entries: [Option<(RString, RString)>; DSC_ANSWER_STRINGS],
}

impl DscAnswerStrings {
    fn of(answer: RHash) -> BindingResult<Self> {
        let mut entries = [None; DSC_ANSWER_STRINGS];
        let mut slots = entries.iter_mut();
        answer.foreach(|key: RValue, value: RValue| {
            if let (Some(key), Some(value)) = (RString::from_value(key), RString::from_value(value))
            {
                match slots.next() {
                    Some(slot) => *slot = Some((key, value)),
                    None => return Ok(ForEach::Stop),
                }
            }
            Ok(ForEach::Continue)
        })?;
        Ok(DscAnswerStrings { entries })
    }

    /// The String of the property `attribute` comes from (`dsc_` and the
    /// property's name in any case, as the Get result's munging names it),
    /// when its text is `text`; taken, so that no two attributes share one.
    fn take(&mut self, ruby: &Ruby, attribute: &str, text: &str) -> Option<RString> {
        let property = attribute.strip_prefix("dsc_")?;
        let slot = self.entries.iter_mut().find(|slot| {
            slot.is_some_and(|(key, value)| {
                // SAFETY: the key's bytes are compared and dropped before
                // any other Ruby call, so it cannot change or be collected
                // meanwhile.
                unsafe { key.as_slice() }.eq_ignore_ascii_case(property.as_bytes())
                    && text_is(ruby, value, text)
            })
        })?;
        slot.take().map(|(_, value)| value)
    }
}
