//! Secrets, at the bottom of the core: the marker texts that stand where a
//! secret was and how one is chosen (`marker.rs`), where a Puppet type or a
//! desired value holds secrets ([`Secrecy`], [`secrecy_of_type`],
//! [`secrecy_of_value`]), peeling and adding Sensitive wrappers ([`peel`],
//! [`mark`]), and how a value is shown (`Display`, in `shown.rs`).
//!
//! It reads values (`crate::value`) and nothing else of the crate:
//! `typedef`, `literal`, `script`, `redact` and `lifecycle` use it, so no
//! import runs in a circle (docs/behavior.md, "Secret tracking").

mod marker;
mod schema;
mod sensitive;
mod shown;
mod type_string;

pub use marker::{
    with_clean_marker, GUARDED_SECRET_CHARS, REDACTED_SENSITIVE, REDACTION_FALLBACK,
    REDACTION_MARKER,
};
pub use schema::Secrecy;
pub use sensitive::{mark, peel, secrecy_of_value};
pub use type_string::secrecy_of_type;
