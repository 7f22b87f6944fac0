//! The Ruby values of the running entry call that its callbacks may pass
//! on as they are ([`EntryValues`]).

use std::cell::Cell;

use magnus::{RArray, RHash, Ruby, Value as RValue};
use pwshlib_core::Map;

use super::matching::ruby_matches_map;

/// The Ruby values of the running entry call that its callbacks may pass
/// on as they are. Held by the entry call's `RubyProvider`, on the machine
/// stack, which the collector scans and pins: never boxed or kept beyond
/// the call.
#[derive(Default)]
pub struct EntryValues {
    /// What this entry call received from Ruby: a resource hash, or the
    /// array of them `canonicalize` got. A resource the callbacks pass on
    /// that equals one of them is passed as that very object, as pwshlib
    /// 2.x passed `r` to `invoke_get_method` and its `name_hash` on to
    /// `invoke_dsc_resource`, with no copy made. It is one of the entry
    /// call's own arguments, so it stays alive while the call runs.
    received: Cell<Option<RValue>>,
    /// The hash the last `invoke_dsc_resource` of this entry call answered
    /// with: `invoke_get_method`'s result passes on its Strings, as pwshlib
    /// 2.x returned that very hash, re-keyed.
    dsc_answer: Cell<Option<RHash>>,
}

impl EntryValues {
    /// `value` (an argument of the running entry call: a hash, or an array
    /// of hashes) is what later callbacks may pass on as it is.
    pub fn set_received(&self, value: RValue) {
        self.received.set(Some(value));
    }

    /// The received hash that `map` equals (entries and order, no
    /// allocation to tell), if any. Equality is checked at the moment of
    /// passing, so a hash changed in place meanwhile is not taken.
    pub fn received_equal_to(&self, ruby: &Ruby, map: &Map) -> Option<RValue> {
        let received = self.received.get()?;
        if let Some(hash) = RHash::from_value(received) {
            return ruby_matches_map(ruby, hash, map).then_some(received);
        }
        let array = RArray::from_value(received)?;
        (0..array.len()).find_map(|index| {
            let entry: RValue = array.entry(index as isize).ok()?;
            RHash::from_value(entry)
                .is_some_and(|hash| ruby_matches_map(ruby, hash, map))
                .then_some(entry)
        })
    }

    /// Keeps `answer`, what `invoke_dsc_resource` answered, when a hash.
    pub fn keep_dsc_answer(&self, answer: RValue) {
        if let Some(answer) = RHash::from_value(answer) {
            self.dsc_answer.set(Some(answer));
        }
    }

    /// The hash the last `invoke_dsc_resource` of this entry call answered
    /// with, if it answered with one.
    pub fn dsc_answer(&self) -> Option<RHash> {
        self.dsc_answer.get()
    }
}
