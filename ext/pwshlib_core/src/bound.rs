//! Secrets sent as data: the values a DSC call's script refers to by
//! variable, which the host binds in the runspace before the script runs
//! (docs/protocol.md, "Secrets").
//!
//! PowerShell keeps logs of what it compiles and runs: script block
//! logging records every script's text, transcription the commands, module
//! logging every parameter a module's command is given, and AMSI sees every
//! script. A secret written into the script as a literal reaches all of
//! them. So while a script is written (`TrackedText` (`literal.rs`) in
//! binding mode) every secret leaf (a string, a number, a boolean, a
//! date-time's text) leaves a [`SENTINEL`] in the text and its value in a
//! list; [`bind_leaves`] then gives each sentinel a variable name. A
//! credential is bound whole, as a `PSCredential` the host's C# builds, so
//! no command ever receives its password as a string.

/// What a secret leaf leaves in the text while the script is written: NUL,
/// which no literal can hold (strings with NUL are refused, names and paths
/// too), so it marks nothing but a leaf.
pub const SENTINEL: char = '\0';

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

/// The text of a section written in binding mode, each sentinel replaced
/// by `$` and a fresh name from `names`, and the leaves bound under those
/// names, in order.
pub fn bind_leaves(
    text: &str,
    leaves: Vec<BoundValue>,
    names: &mut dyn FnMut(&str) -> String,
) -> (String, Vec<SecretBinding>) {
    let mut out = String::with_capacity(text.len() + leaves.len() * 40);
    let mut bindings = Vec::with_capacity(leaves.len());
    let mut leaves = leaves.into_iter();
    for (index, piece) in text.split(SENTINEL).enumerate() {
        if index > 0 {
            // One leaf per sentinel: TrackedText pushes them together.
            let value = leaves.next().unwrap_or(BoundValue::Text(String::new()));
            let name = names(SECRET_PREFIX);
            out.push('$');
            out.push_str(&name);
            bindings.push(SecretBinding { name, value });
        }
        out.push_str(piece);
    }
    (out, bindings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sentinel_becomes_its_own_variable() {
        let mut counter = 0;
        let mut names = |prefix: &str| {
            counter += 1;
            format!("{prefix}{counter}")
        };
        let (text, bindings) = bind_leaves(
            "@{a = \0; b = @(\0, 1)}",
            vec![
                BoundValue::Text("x".into()),
                BoundValue::Integer("5".into()),
            ],
            &mut names,
        );
        assert_eq!(text, "@{a = $secret_1; b = @($secret_2, 1)}");
        assert_eq!(bindings.len(), 2);
        assert_eq!(bindings[1].value, BoundValue::Integer("5".into()));
    }
}
