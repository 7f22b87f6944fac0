//! What the provider hands to Ruby and may get back unchanged, kept per
//! provider object ([`Handover`]): the native method that the call reaches
//! takes it as it is instead of converting it back.

use std::cell::RefCell;

use magnus::{RHash, Ruby, Value as RValue};
use pwshlib_core::{Map, Value};

use super::matching::{ruby_matches, ruby_matches_map};

/// The provider's hand-over slots (one per provider object): values just
/// converted for Ruby, and the hash arguments lent to the overridable
/// method being called. Owned Rust data and raw pointers only, never a
/// Ruby value.
#[derive(Default)]
pub struct Handover(RefCell<Slots>);

#[derive(Default)]
struct Slots {
    /// Values this provider has just converted for Ruby and is about to get
    /// back unchanged, unless an override changes them: the result of one
    /// of its native methods (see [`Handover::take_handed`]).
    handed_over: Vec<Value>,
    /// The hash arguments of the overridable method this provider is
    /// calling right now, lent rather than copied (see
    /// [`Handover::lending`]): each points at a Map of the calling frame,
    /// which is suspended in that call for as long as the entry stays
    /// here, and is taken out when the call returns.
    lent: Vec<LentMap>,
}

/// A Map of a frame suspended in a Ruby call, lent to the native methods
/// that call reaches in the same Fiber.
#[derive(Clone, Copy)]
struct LentMap {
    map: *const Map,
    /// The Fiber (of its thread) whose frame holds the map, as its VALUE
    /// bits, only compared: only its own nested calls, which end before
    /// that frame does, may borrow the map. Another thread, or another
    /// Fiber of the thread, could still hold a borrow once the lender has
    /// returned.
    fiber: u64,
}

// SAFETY: the provider (and so this state) may move between threads with
// the Ruby object, but a lent map is only dereferenced in the Fiber, and so
// on the thread, that lent it (`Handover::lent_equal_to` compares `fiber`),
// within the call it was lent for.
unsafe impl Send for LentMap {}

/// The running Fiber, as its VALUE bits (see [`LentMap::fiber`]).
fn current_fiber() -> u64 {
    // SAFETY: called with the GVL held, from a method Ruby called;
    // `rb_fiber_current` only reads (or, the first time on a thread, makes)
    // the running Fiber's object.
    unsafe { rb_sys::rb_fiber_current() as u64 }
}

impl Handover {
    /// Forgets everything (a provider initialized again).
    pub fn reset(&self) {
        *self.0.borrow_mut() = Slots::default();
    }

    /// Remembers `values`, just converted for Ruby, in place of what was
    /// handed over before: the next native method of this provider that
    /// receives one of them unchanged takes it instead of converting it back.
    pub fn hand_over(&self, values: Vec<Value>) {
        self.0.borrow_mut().handed_over = values;
    }

    /// The value handed over that `value` (from Ruby) equals, taken; None
    /// when there is none (an override made or changed it), and the caller
    /// converts. Equality is checked, not assumed from identity: Ruby code
    /// may have changed the object in place.
    pub fn take_handed(&self, ruby: &Ruby, value: RValue) -> Option<Value> {
        let mut handed = std::mem::take(&mut self.0.borrow_mut().handed_over);
        let found = handed
            .iter()
            .position(|candidate| ruby_matches(ruby, value, candidate))
            .map(|index| handed.swap_remove(index));
        let mut slots = self.0.borrow_mut();
        if slots.handed_over.is_empty() {
            slots.handed_over = handed;
        }
        found
    }

    /// The map lent by a caller suspended in this Fiber that `hash` equals
    /// (no copy either way), if any. Borrowed for as long as the entry call
    /// asking runs: a lent map's frame is suspended in the Ruby call that
    /// reached it (see [`Self::lending`]).
    pub fn lent_equal_to(&self, ruby: &Ruby, hash: RHash) -> Option<&Map> {
        let lent = std::mem::take(&mut self.0.borrow_mut().lent);
        let fiber = current_fiber();
        let found = lent
            .iter()
            .filter(|lent| lent.fiber == fiber)
            // SAFETY: each pointer of this Fiber is a Map of a frame of
            // this Fiber suspended in the Ruby call that led here
            // (`lending` takes them out when that call returns), so it is
            // live and unchanged (borrowed shared) while the entry call
            // asking, nested in that call and so ending first, runs.
            .map(|lent| unsafe { &*lent.map })
            .find(|map| ruby_matches_map(ruby, hash, map));
        self.0.borrow_mut().lent = lent;
        found
    }

    /// Runs `call` (a call through Ruby of an overridable method) with
    /// `maps`, its hash arguments, lent to the native method it reaches:
    /// that method takes one that comes back unchanged as it is, where a
    /// copy was made for every call before. They are taken back when
    /// `call` returns, or unwinds.
    pub fn lending<R>(&self, maps: &[&Map], call: impl FnOnce() -> R) -> R {
        struct Restore<'h> {
            handover: &'h Handover,
            before: Vec<LentMap>,
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.handover.0.borrow_mut().lent = std::mem::take(&mut self.before);
            }
        }
        let fiber = current_fiber();
        let lent = maps
            .iter()
            .map(|map| LentMap {
                map: std::ptr::from_ref::<Map>(map),
                fiber,
            })
            .collect();
        let before = std::mem::replace(&mut self.0.borrow_mut().lent, lent);
        let _restore = Restore {
            handover: self,
            before,
        };
        call()
    }
}
