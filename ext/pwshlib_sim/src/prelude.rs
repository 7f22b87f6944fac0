//! Preludes in the simulator, as host.ps1 keeps them (docs/protocol.md,
//! "Preludes"): a request may name a prelude, whose functions are then
//! defined for its code; the first such request of a session carries the
//! prelude's text, later ones only its id. A plain request sees none of
//! them. The sim models "defined" by the function names: a script that calls
//! one of the shipped prelude's functions without it being defined (by the
//! script itself or by the prelude it runs with) fails as PowerShell would.

use pwshlib_core::templates;
use pwshlib_transport::protocol::ExecuteRequest;
use tree_sitter::{Node, Tree};

/// The prelude a host session holds.
#[derive(Debug, Default)]
pub struct Session {
    held: Option<Held>,
}

#[derive(Debug)]
struct Held {
    id: String,
    functions: Vec<String>,
}

/// What a request runs with: the functions defined before its code, and the
/// prelude id to echo in the result.
#[derive(Debug, Default, PartialEq)]
pub struct Admitted {
    pub functions: Vec<String>,
    pub prelude: Option<String>,
}

impl Session {
    /// The id of the prelude this session holds.
    pub fn held(&self) -> Option<&str> {
        self.held.as_ref().map(|held| held.id.as_str())
    }

    /// Defines the request's prelude when it carries the text, and says what
    /// its code runs with. `Err` is the request's error message (the code
    /// does not run): a prelude that does not parse, or one named by id that
    /// this session does not hold.
    pub fn admit(&mut self, request: &ExecuteRequest) -> Result<Admitted, String> {
        let Some(prelude) = &request.prelude else {
            return Ok(Admitted::default());
        };
        if let Some(code) = &prelude.code {
            if let Err(e) = crate::syntax::parse(code) {
                self.held = None;
                return Err(format!(
                    "The host could not define prelude '{}': {e}",
                    prelude.id
                ));
            }
            self.held = Some(Held {
                id: prelude.id.clone(),
                functions: templates::defined_functions(code),
            });
        }
        match &self.held {
            Some(held) if held.id == prelude.id => Ok(Admitted {
                functions: held.functions.clone(),
                prelude: Some(held.id.clone()),
            }),
            _ => Err(format!(
                "The prelude '{}' is not defined in this host session; send its code first",
                prelude.id
            )),
        }
    }
}

/// The first call to one of the shipped prelude's functions, outside any
/// function body, that neither `defined` nor the script itself defines:
/// PowerShell's message for it.
pub fn undefined_prelude_call(code: &str, tree: &Tree, defined: &[String]) -> Option<String> {
    let own = templates::defined_functions(code);
    let known = |name: &str| {
        defined
            .iter()
            .chain(own.iter())
            .any(|d| d.eq_ignore_ascii_case(name))
    };
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "function_statement" | "script_block_expression" => continue,
            "command" => {
                if let Some(name) = node.child_by_field_name("command_name") {
                    let name = &code[name.byte_range()];
                    let helper = templates::prelude_function_names()
                        .iter()
                        .any(|f| f.eq_ignore_ascii_case(name));
                    if helper && !known(name) {
                        return Some(format!(
                            "The term '{name}' is not recognized as a name of a cmdlet, function, script file, or executable program."
                        ));
                    }
                }
            }
            _ => {}
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    None
}
