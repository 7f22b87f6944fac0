//! Building the Invoke-DscResource script, with secret positions tracked as
//! the text is written (see docs/architecture.md). STUB: the script-building
//! work fills this in; the signatures are the contract other parts code to.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::typedef::TypeDef;
use crate::value::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DscMethod {
    Get,
    Set,
    Test,
}

impl DscMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            DscMethod::Get => "Get",
            DscMethod::Set => "Set",
            DscMethod::Test => "Test",
        }
    }
}

/// A finished script: the real text for PowerShell and the byte ranges of
/// every secret literal in it.
#[derive(Debug, Clone, Default)]
pub struct Script {
    text: String,
    secret_spans: Vec<Range<usize>>,
}

impl Script {
    /// The text PowerShell runs. Never log it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text for logs, with every secret literal replaced by a marker.
    pub fn redacted(&self) -> String {
        let _ = &self.secret_spans;
        unimplemented_script()
    }
}

fn unimplemented_script() -> String {
    String::new()
}

/// What pwshlib 2.x calls the invocable resource: everything needed to build
/// one script. Converts to and from a Value (a Ruby hash) for the
/// Ruby-visible `invocable_resource` / `ps_script_content` pair.
#[derive(Debug, Clone, PartialEq)]
pub struct InvocableResource {
    pub value: Value,
}

impl InvocableResource {
    /// `should` is a resource hash (Symbol keys, `dsc_` attributes), method
    /// is Get/Set/Test, `vendored_modules_path` comes from the load path.
    pub fn new(
        _typedef: &TypeDef,
        _should: &Map,
        _method: DscMethod,
        _vendored_modules_path: &str,
    ) -> Result<Self> {
        Err(Error::Invocation(
            "script building is not implemented yet".into(),
        ))
    }

    pub fn to_value(&self) -> Value {
        self.value.clone()
    }

    pub fn from_value(value: &Value) -> Result<Self> {
        Ok(InvocableResource {
            value: value.clone(),
        })
    }
}

/// Builds the script for one invocation.
pub fn build_script(_resource: &InvocableResource) -> Result<Script> {
    Err(Error::Invocation(
        "script building is not implemented yet".into(),
    ))
}
