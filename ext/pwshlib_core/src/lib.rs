//! The pure-Rust core of pwshlib. Nothing in this crate knows about Ruby: the
//! binding crate (`ext/pwshlib`) converts Ruby values into [`value::Value`]
//! and [`typedef::TypeDef`] and calls in here. Nothing here talks to a
//! PowerShell host either: the lifecycle asks for each DSC call through
//! [`lifecycle::Provider`]; the binding answers through Ruby and
//! `Pwsh::Manager`, which talks to the host with `ext/pwshlib_transport`.
#![forbid(unsafe_code)]

pub mod bound;
pub mod call_data;
pub mod cim_type;
pub mod edition;
pub mod error;
pub mod literal;
pub mod redact;
pub mod script;
pub mod secrecy;
pub mod templates;
pub mod typedef;
pub mod value;
pub mod vendored;

pub use cim_type::{CimType, MofType};
pub use error::{Error, Result};
pub use typedef::{Attribute, Behaviour, TypeDef};
pub use value::{Map, Timestamp, Value};
pub mod cache;
pub mod canonical;
pub mod lifecycle;
pub mod munge;
pub mod run;

#[cfg(test)]
pub(crate) mod test_support;
