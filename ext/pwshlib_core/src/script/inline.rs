//! The inline form of a script's bound secrets (`bound.rs`): one
//! `$name = <literal>` line each, every literal a secret span. What a
//! manager that cannot bind (pwshlib 2.x, a test double, an older host)
//! runs in front of the script's lines, what the pwshlib 2.x section
//! methods return, and what `--debug` shows, redacted.

use crate::bound::{BoundValue, SecretBinding};
use crate::error::Result;
use crate::literal::TrackedText;

/// The lines that set each bound variable by a literal. Never log them
/// unredacted.
pub fn inline_lines(bindings: &[SecretBinding]) -> Result<TrackedText> {
    let mut out = TrackedText::new();
    for binding in bindings {
        let attribute = binding.name.as_str();
        out.push("$");
        out.push(attribute);
        out.push(" = ");
        match &binding.value {
            BoundValue::Credential {
                user,
                user_secret,
                password,
            } => {
                out.push("New-PsCredential -User ");
                out.maybe_secret(*user_secret, |w| w.string(user, attribute))?;
                out.push(" -Password ");
                out.secret_string(password, attribute)?;
            }
            BoundValue::Text(text) => out.secret(|w| w.string(text, attribute))?,
            BoundValue::Integer(text) | BoundValue::Real(text) => {
                out.secret(|w| w.push(text));
            }
            BoundValue::Bool(value) => {
                out.secret(|w| w.push(if *value { "$true" } else { "$false" }));
            }
        }
        out.push("\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_lines_mark_every_secret_literal() {
        let bindings = vec![
            SecretBinding {
                name: "secret_1".into(),
                value: BoundValue::Text("p'ss".into()),
            },
            SecretBinding {
                name: "secret_2".into(),
                value: BoundValue::Integer("4242".into()),
            },
            SecretBinding {
                name: "cred_1".into(),
                value: BoundValue::Credential {
                    user: "svc".into(),
                    user_secret: false,
                    password: "hunter2!".into(),
                },
            },
        ];
        let lines = inline_lines(&bindings).unwrap();
        assert_eq!(
            lines.text(),
            "$secret_1 = 'p''ss'\n$secret_2 = 4242\n$cred_1 = New-PsCredential -User 'svc' -Password 'hunter2!'\n"
        );
        let spans: Vec<&str> = lines
            .spans()
            .iter()
            .map(|r| &lines.text()[r.clone()])
            .collect();
        assert_eq!(spans, ["'p''ss'", "4242", "'hunter2!'"]);
    }
}
