//! Not converting twice: every way the binding passes a value on as it is,
//! instead of converting it again, in one place. Each one checks equality
//! (`matching`) at the moment it passes a value on, so an override or Ruby
//! code that changed the value in place, or made a new one, is converted
//! as usual; a false answer of the check is always safe. The contract they
//! serve: the overridable methods are called through Ruby with Ruby values
//! (CONTRIBUTING.md, "Overridable methods"), so a Get crosses the boundary
//! several times; these keep the crossings from copying.
//!
//! Figures are per in-sync resource against the no-op+insync floor, from the
//! CHANGELOG's "Performance (issue 15)" steps (docs/performance.md explains
//! the benches); each step shipped with others, so a figure is the step's.
//!
//! | mechanism | what it saves | GC / lifetime invariant | benchmark that justifies it |
//! | --- | --- | --- | --- |
//! | [`EntryValues::received_equal_to`] (`received`; `RubyProvider::ruby_hash_of`) | a new hash and its Strings for each overridable call: `canonicalize`'s resource goes to `invoke_get_method`, and its `name_hash` to `invoke_dsc_resource`, as the very object (as pwshlib 2.x passed `r` and `name_hash`) | the value is an argument of the running entry call; `EntryValues` lives in the `RubyProvider` on the machine stack (scanned and pinned by the collector), never boxed, gone with the call | second step: 3,112,373 → 3,078,801 instructions (`bench/instructions_bench.rb`, with the core's copies removed in the same step); `bench/catalog_bench.rb` 1.13 / 1.14 at N=1,000 / 5,000 |
//! | [`Handover::hand_over`] / [`Handover::take_handed`] | converting back the result the provider's native `invoke_dsc_resource` or `invoke_get_method` just made for Ruby, when it returns through Ruby unchanged | owned Rust `Value`s only, no Ruby value; per provider object; the next hand-over replaces them | first step (with the prelude split, interning, FxHash, mimalloc): the provider's own calls 48.6 → 28 µs (`bench/provider_calls_bench.rb`), first `canonicalize` 31 → 17 µs; catalog 1.24 → 1.13 at N=1,000 |
//! | [`Handover::lending`] / [`Handover::lent_equal_to`] (a raw `*const Map`, `unsafe impl Send`) | copying the hash arguments of `invoke_get_method` / `invoke_dsc_resource` for the native method they reach: it borrows the caller's `Map` when the hash comes back unchanged | the pointer is to a frame suspended in the Ruby call; dereferenced only in the Fiber that lent it (its VALUE bits compared) and only while that call runs (a drop guard takes it back on return or unwind); `Send` because the object may move threads, the pointer is only used on the lender's Fiber (`spec/unit/override_dispatch_spec.rb` runs the call from another Fiber and Thread under GC.stress) | third step (with JSON read straight into values, fewer allocations): 3,073,231 → 3,017,084 instructions (1.080 → 1.069); `bench/ab_bench.rb` 1.114 → 1.081 at N=1,000, 1.158 → 1.105 at N=5,000 |
//! | [`Donors`] (DSC answer Strings, `name` from `name_hash`, same key) and [`map_to_ruby_reusing`] | new Strings in `invoke_get_method`'s result (the DSC answer's own, re-keyed, as pwshlib 2.x returned), in the props passed to `invoke_dsc_resource` (`name_hash`'s), and in `get`'s result (the title and namevars Puppet asked with, which the run keeps) | Ruby values on the stack only: a `Donors` is a local, its DSC answer a fixed array inside it, never boxed | "Five fewer objects per Get"; with the given array below: 646.7 → 631.7 objects per resource (floor 619.7, `bench/instructions_bench.rb`); each object costs more in collection than in making (docs/performance.md, "Garbage collection") |
//! | the given back as the answer (`canonicalize`'s array, a resource canonical as given) | a new array and hash per `canonicalize` call when nothing changed | the given array is the entry call's own argument, returned | counted in the 646.7 → 631.7 objects above |
//! | [`matching::ruby_matches`] / [`ruby_matches_map`] | the allocation of converting just to compare: the check every row makes | bytes borrowed from a Ruby String only until compared, with no Ruby call between | the check behind each figure above |
//!
//! Each stays while its figure holds: one that no longer pays for itself
//! in `rake bench` is taken out, with the figures of both runs in the
//! commit.

mod donors;
mod entry_values;
mod matching;
mod slots;

pub use donors::{map_to_ruby_reusing, Donors};
pub use entry_values::EntryValues;
pub use matching::ruby_matches_map;
pub use slots::Handover;
