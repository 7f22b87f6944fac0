//! The pure-Rust core of pwshlib. Nothing in this crate knows about Ruby: the
//! binding crate (`ext/pwshlib`) converts Ruby values into [`value::Value`]
//! and [`typedef::TypeDef`] and calls in here.

pub mod error;
pub mod protocol;
pub mod script;
pub mod typedef;
pub mod value;
pub mod vendored;

pub use error::{Error, Result};
pub use typedef::{Attribute, Behaviour, TypeDef};
pub use value::{Map, Timestamp, Value};
