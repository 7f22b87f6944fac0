//! Not converting twice: every way the binding passes a value on as it is,
//! instead of converting it again, in one place. Each one checks equality
//! (`matching`) at the moment it passes a value on, so an override or Ruby
//! code that changed the value in place, or made a new one, is converted
//! as usual; a false answer of the check is always safe. The contract they
//! serve: the overridable methods are called through Ruby with Ruby values
//! (CONTRIBUTING.md, "Overridable methods"), so a Get crosses the boundary
//! several times; these keep the crossings from copying.
//!
//! Each mechanism's figure is what taking it out alone costs, per in-sync
//! resource, counted by `bench/instructions_bench.rb` (callgrind, catalogs
//! of 100 and 600; machine load does not move it; the floor's own count
//! moves by about 1,500 from run to run) on 2026-11-26, issue 29: with all
//! of them, 2,507,483 to 2,508,795 instructions (156,777 to 157,563 over
//! the no-op+insync floor, 1.067) and 631.7 Ruby objects (floor 619.7).
//! Ruby objects are what the collector's work follows: each costs more in
//! collection than in its making (docs/performance.md, "Garbage
//! collection"). The step that brought each one in is in the CHANGELOG
//! ("Performance (issue 15)").
//!
//! | mechanism | what it saves | GC / lifetime invariant | taken out alone |
//! | --- | --- | --- | --- |
//! | [`EntryValues::received_equal_to`] (`received`; `RubyProvider::ruby_hash_of`) | a new hash and its Strings per overridable call: `canonicalize`'s resource goes on to `invoke_get_method`, and that method's `name_hash` to `invoke_dsc_resource`, as the very object (as pwshlib 2.x passed `r` and `name_hash`) | the value is an argument of the running entry call; `EntryValues` lives in the `RubyProvider` on the machine stack (scanned and pinned by the collector), never boxed, gone with the call | 641.7 objects (+10), 159,832 over the floor (+2,700) |
//! | [`Handover::hand_over`] / [`Handover::take_handed`] | converting back what the provider's native `invoke_dsc_resource` or `invoke_get_method` just made for Ruby, when it returns through Ruby unchanged | owned Rust `Value`s only, no Ruby value; per provider object; the next hand-over replaces them | 160,962 over the floor (+3,800), objects the same |
//! | [`Handover::lending`] / [`Handover::lent_equal_to`] (a raw `*const Map`, `unsafe impl Send`) | copying the hash arguments of `invoke_get_method` / `invoke_dsc_resource` for the native method they reach, which borrows the caller's `Map` when the hash comes back unchanged | the pointer is into a frame suspended in the Ruby call; dereferenced only in the Fiber that lent it (its VALUE bits compared) and only while that call runs (a drop guard takes it back on return or unwind); `Send` because the object may move threads while the pointer is only used on the lender's Fiber (`spec/unit/override_dispatch_spec.rb` runs the call from another Fiber and Thread under GC.stress) | 160,274 and 160,756 over the floor (+3,300), objects the same |
//! | [`Donors`] (the DSC answer's Strings, `name` from `name_hash`, the same key) and [`map_to_ruby_reusing`] | new Strings in `invoke_get_method`'s result (the DSC answer's own, re-keyed, as pwshlib 2.x returned them), in the props passed to `invoke_dsc_resource` (`name_hash`'s), and in `get`'s result (the title and namevars Puppet asked with, which the run keeps) | Ruby values on the stack only: a `Donors` is a local, its DSC answer a fixed array inside it, never boxed | 638.7 objects (+7), instructions the same (156,839) |
//! | the given back as the answer (`canonicalize`'s array when every resource comes back as given; a resource canonical as given) | a new array and hash per `canonicalize` call when nothing changed | the given array is the entry call's own argument, returned | with `get`'s Strings, 646.7 → 631.7 objects when it came (CHANGELOG, fifth and sixth steps) |
//! | [`matching::ruby_matches`] / [`ruby_matches_map`] | the allocation of converting just to compare: the check every row makes | bytes borrowed from a Ruby String only until compared, with no Ruby call between | the check behind each row |
//!
//! Each one still saves objects or instructions. One whose row stops
//! paying (nothing saved when it is taken out alone) goes, with both counts
//! in the commit.

mod donors;
mod entry_values;
mod matching;
mod slots;

pub use donors::{map_to_ruby_reusing, Donors};
pub use entry_values::EntryValues;
pub use matching::ruby_matches_map;
pub use slots::Handover;
