//! Secrets sent beside a DSC call: the values the call refers to by
//! variable ([`crate::call_data::CallValue::Var`]), which the host binds
//! before the call (docs/protocol.md, "Secrets").
//!
//! PowerShell keeps logs of what it compiles and runs: script block
//! logging records every script's text, transcription the commands, module
//! logging every parameter a module's command is given, and AMSI sees every
//! script. A secret written into a script as a literal reaches all of
//! them. So every secret leaf (a string, a number, a boolean, a date-time's
//! text) is bound under a variable name when the call is built
//! (`script/calling.rs`). A credential is bound whole, as a `PSCredential`
//! the host's C# builds, so no command ever receives its password as a
//! string.

/// The prefix of a bound leaf's variable name.
pub const SECRET_PREFIX: &str = "secret_";

/// One value the host binds as a variable before the script runs.
#[derive(Debug, Clone, PartialEq)]
pub enum BoundValue {
    /// A `System.String`.
    Text(String),
    /// An integer, as its decimal text: the host gives it the type
    /// PowerShell gives the same literal (Int32, else Int64, else Decimal,
    /// else Double).
    Integer(String),
    /// A `System.Double`, as the text `literal::format_float`
    /// writes.
    Real(String),
    /// A `System.Boolean`.
    Bool(bool),
    /// A `PSCredential`, its password a `SecureString`, built by the host.
    /// `user_secret`: the user name is Sensitive too (only the inline
    /// form's redaction asks).
    Credential {
        user: String,
        user_secret: bool,
        password: String,
    },
}

/// A bound variable: its name (without `$`) and value.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretBinding {
    pub name: String,
    pub value: BoundValue,
}
