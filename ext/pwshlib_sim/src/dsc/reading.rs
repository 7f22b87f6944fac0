//! Reading the script: the Invoke-DscResource call an invocation script
//! makes through `$InvokeParams`, or the error that stops the script first.

use pwshlib_core::script::DscMethod;
use pwshlib_pslint as pslint;
use pwshlib_transport::protocol::{BoundSecret, SecretValue};
use tree_sitter::{Node, Tree};

use super::{Invocation, INVOKE_PARAMS, NO_PARSER};
use crate::psvalue::{eq_ignore_case, excerpt, Evaluator, PsValue};

/// What ValidateSet on Invoke-DscResource's -Method says of anything else;
/// `{}` is the argument, quoted.
const METHOD_REFUSAL: &str = "Cannot validate argument on parameter 'Method'. The argument {} does not belong to the set \"Get,Set,Test\".";

/// Finds the DSC invocation in a script. `Ok(None)`: the script is not a
/// DSC invocation (it never assigns `$InvokeParams`).
/// The script runs as on Windows PowerShell 5.1.
pub fn read_invocation(code: &str) -> Result<Option<Invocation>, String> {
    let tree = pslint::parse_tree(code).ok_or(NO_PARSER)?;
    read_invocation_in(code, &tree, Edition::Desktop)
}

/// Which PowerShell runs the script, the core's one name for it: the
/// prelude's `New-PwshlibEmbeddedInstance` gives a class-based resource's
/// embedded instances another form on each (`$PSVersionTable.PSEdition`):
/// CIM instances on Windows PowerShell 5.1, for the LCM; hashtables on
/// PowerShell 7, which PowerShell converts to the resource's nested class
/// when PSDesiredStateConfiguration 2.x assigns them.
pub use pwshlib_core::edition::Edition;

/// [`read_invocation`] over `tree`, the parse of `code`, on `edition`. A
/// script that assigns `$InvokeParams` but does not parse is refused as the
/// main loop refuses it (`syntax.rs`).
pub fn read_invocation_in(
    code: &str,
    tree: &Tree,
    edition: Edition,
) -> Result<Option<Invocation>, String> {
    read_invocation_bound(code, tree, edition, &[])
}

/// [`read_invocation_in`] with the variables the request binds before the
/// code runs (its `secrets`, as host.ps1's C# binds them: a credential is a
/// PSCredential, a number typed as its literal would be).
pub fn read_invocation_bound(
    code: &str,
    tree: &Tree,
    edition: Edition,
    bound: &[BoundSecret],
) -> Result<Option<Invocation>, String> {
    let root = tree.root_node();
    let mut evaluator = Evaluator::new(code);
    for secret in bound {
        evaluator.assign(&secret.name, bound_value(&secret.value));
    }
    let mut reader = ScriptReader {
        evaluator,
        invoke_params: None,
        constructor_error: None,
        edition,
        through_invoke_dsc_resource: false,
        lcm_unless_system: false,
        vendored_path: None,
    };
    reader.visit(root, 0);
    let Some(params) = reader.invoke_params else {
        return Ok(None);
    };
    if let Some(error) = pslint::first_error(tree, code) {
        return Err(crate::syntax::refusal(&error));
    }
    if let Some(message) = reader.constructor_error {
        return Err(message);
    }
    let params = params?;
    let mut invocation = invocation_from(&params)?;
    invocation.through_invoke_dsc_resource = reader.through_invoke_dsc_resource;
    invocation.lcm_unless_system = reader.lcm_unless_system;
    invocation.vendored_path = reader.vendored_path;
    Ok(Some(invocation))
}

/// A bound secret as the value the host gives its variable.
pub(super) fn bound_value(value: &SecretValue) -> PsValue {
    match value {
        SecretValue::String { value } => PsValue::Str(value.clone()),
        // Int32 or Int64 as PowerShell types the literal; beyond them a
        // Decimal or Double, played as a float.
        SecretValue::Integer { value } => value.parse::<i64>().map_or_else(
            |_| PsValue::Float(value.parse::<f64>().unwrap_or(f64::NAN)),
            PsValue::Int,
        ),
        SecretValue::Real { value } => PsValue::Float(value.parse::<f64>().unwrap_or(f64::NAN)),
        SecretValue::Bool { value } => PsValue::Bool(*value),
        SecretValue::Credential { user, password } => PsValue::Credential {
            user: user.clone(),
            password: password.clone(),
        },
    }
}

struct ScriptReader<'src> {
    evaluator: Evaluator<'src>,
    /// The value of the last `$InvokeParams = …`, or why it failed.
    invoke_params: Option<Result<PsValue, String>>,
    /// Why the first credential or CIM variable could not be built.
    constructor_error: Option<String>,
    edition: Edition,
    /// The script's `Invoke-PwshlibDscResource` call carries
    /// `-ThroughInvokeDscResource` (the agent's `PWSHLIB_DSC_DIRECT=0`).
    through_invoke_dsc_resource: bool,
    /// It carries `-LcmUnlessSystem` (the agent's `PWSHLIB_DSC_DIRECT=system`).
    lcm_unless_system: bool,
    /// Its `-VendoredPath`, when it has one.
    vendored_path: Option<String>,
}

/// The prelude's function that makes the call.
const INVOKE_FUNCTION: &str = "Invoke-PwshlibDscResource";
/// Its switch for a call through Invoke-DscResource rather than direct.
const THROUGH_SWITCH: &str = "-ThroughInvokeDscResource";
/// Its switch for a call through the LCM unless the host is SYSTEM.
const LCM_SWITCH: &str = "-LcmUnlessSystem";
/// Its parameter naming the vendored folder.
const VENDORED_PATH: &str = "VendoredPath";

const MAX_STATEMENT_DEPTH: usize = 100;

/// The `-Name value` pairs of a command, in order; a switch's value is None.
type Arguments = Vec<(String, Option<PsValue>)>;

impl ScriptReader<'_> {
    /// Visits the statements in document order. Function bodies are skipped:
    /// the templates define helpers there, and nothing in them runs until
    /// called.
    fn visit(&mut self, node: Node, depth: usize) {
        if depth > MAX_STATEMENT_DEPTH {
            return;
        }
        match node.kind() {
            "function_statement" | "class_statement" | "script_block_expression" | "comment" => {}
            "assignment_expression" => self.assignment(node),
            "command"
                if eq_ignore_case(self.evaluator.text(command_name(node)), INVOKE_FUNCTION) =>
            {
                let text = self.evaluator.text(node);
                let has = |switch: &str| {
                    text.split_whitespace()
                        .any(|word| eq_ignore_case(word, switch))
                };
                self.through_invoke_dsc_resource |= has(THROUGH_SWITCH);
                self.lcm_unless_system |= has(LCM_SWITCH);
                let arguments = self.arguments(node).unwrap_or_default();
                for (name, value) in arguments {
                    if let (true, Some(PsValue::Str(path))) =
                        (eq_ignore_case(&name, VENDORED_PATH), value)
                    {
                        self.vendored_path = Some(path);
                    }
                }
            }
            _ => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.visit(child, depth + 1);
                }
            }
        }
    }

    fn assignment(&mut self, node: Node) {
        let Some(operator) = node.child(1) else {
            return;
        };
        if self.evaluator.text(operator).trim() != "=" {
            return;
        }
        let (Some(target), Some(value)) = (
            node.child(0).and_then(single_variable),
            node.child_by_field_name("value"),
        ) else {
            return;
        };
        let name = self.evaluator.text(target).to_owned();
        let is_invoke_params = eq_ignore_case(name.trim_start_matches('$'), INVOKE_PARAMS);
        let result = match single_command(value) {
            Some(command) => self.command(command),
            None => self.evaluator.eval(value),
        };
        if is_invoke_params {
            self.invoke_params = Some(result.clone());
        }
        match result {
            Ok(value) => self.evaluator.assign(&name, value),
            // The templates assign things the sim does not model (command
            // output, .NET calls); only an unreadable $InvokeParams, or a
            // credential or CIM variable, matters.
            Err(message) => {
                let constructor = single_command(value)
                    .is_some_and(|c| is_constructor(self.evaluator.text(command_name(c))));
                if constructor {
                    self.constructor_error.get_or_insert(message);
                }
            }
        }
    }

    /// Evaluates `New-PsCredential`, `New-CimInstance` and the prelude's
    /// `New-PwshlibEmbeddedInstance` and `New-PwshlibEmbeddedInstanceArray`;
    /// other commands are not modelled.
    fn command(&self, command: Node) -> Result<PsValue, String> {
        let name = self.evaluator.text(command_name(command));
        let arguments = self.arguments(command)?;
        let argument = |wanted: &str| -> Option<&PsValue> {
            arguments
                .iter()
                .find(|(name, _)| eq_ignore_case(name, wanted))
                .and_then(|(_, value)| value.as_ref())
        };
        let text_argument = |wanted: &str| -> Result<String, String> {
            match argument(wanted) {
                Some(PsValue::Str(s)) => Ok(s.clone()),
                _ => Err(format!("{name}: -{wanted} must be a string literal")),
            }
        };
        if eq_ignore_case(name, "New-PsCredential") {
            Ok(PsValue::Credential {
                user: text_argument("User")?,
                password: text_argument("Password")?,
            })
        } else if eq_ignore_case(name, "New-CimInstance")
            || eq_ignore_case(name, "New-PwshlibEmbeddedInstance")
        {
            let class = text_argument("ClassName")?;
            let properties = match argument("Property") {
                Some(PsValue::Hash(entries)) => entries.clone(),
                None | Some(PsValue::Null) => Vec::new(),
                Some(_) => return Err(format!("{name}: -Property must be a hashtable")),
            };
            let cim = eq_ignore_case(name, "New-CimInstance") || self.edition == Edition::Desktop;
            if !cim {
                // PowerShell 7: the hashtable itself, which PowerShell
                // converts to the nested class on assignment (a $null or a
                // plain hashtable member is fine there); played as an
                // instance of that class, which the prelude reads back with
                // its class name as a CIM instance's. A credential is a
                // PSCredential.
                if eq_ignore_case(&class, "MSFT_Credential") {
                    let member = |wanted: &str| match properties
                        .iter()
                        .find(|(key, _)| eq_ignore_case(key, wanted))
                    {
                        Some((_, PsValue::Str(text))) => Ok(text.clone()),
                        _ => Err(format!("{name}: MSFT_Credential needs a string {wanted}")),
                    };
                    return Ok(PsValue::Credential {
                        user: member("UserName")?,
                        password: member("Password")?,
                    });
                }
                return Ok(PsValue::Cim { class, properties });
            }
            for (property, value) in &properties {
                if let Some(what) = crate::psvalue::cim_property_refusal(value) {
                    // What MMI's CimProperty.Create throws, naming the
                    // property so that a test failure says where.
                    return Err(format!(
                        "New-CimInstance : Cannot infer CimType from the .NET object type of property '{property}' of {class} ({what})"
                    ));
                }
            }
            Ok(PsValue::Cim { class, properties })
        } else if eq_ignore_case(name, "New-PwshlibCredentialInstance") {
            self.credential_instance(name, &arguments)
        } else if eq_ignore_case(name, "New-PwshlibEmbeddedInstanceArray") {
            let items = match argument("Instances") {
                Some(PsValue::Array(items) | PsValue::TypedArray { items, .. }) => items.clone(),
                None | Some(PsValue::Null) => Vec::new(),
                Some(_) => return Err(format!("{name}: -Instances must be an array")),
            };
            Ok(match self.edition {
                // [CimInstance[]], as a MOF resource's script casts it.
                Edition::Desktop => PsValue::TypedArray {
                    element: "ciminstance".to_owned(),
                    items,
                },
                Edition::Core => PsValue::Array(items),
            })
        } else {
            Err(format!("pwshlib-sim does not run the command {name}"))
        }
    }

    /// The prelude's `New-PwshlibCredentialInstance`: from a PSCredential
    /// the host bound, an MSFT_Credential CIM instance (built by the host's
    /// compiled code from the credential), or for a class-based resource on
    /// PowerShell 7 the credential itself.
    fn credential_instance(&self, name: &str, arguments: &Arguments) -> Result<PsValue, String> {
        let credential = arguments
            .iter()
            .find(|(parameter, _)| eq_ignore_case(parameter, "Credential"))
            .and_then(|(_, value)| value.as_ref());
        let Some(PsValue::Credential { user, password }) = credential else {
            return Err(format!(
                "{name}: Cannot process argument transformation on parameter 'Credential'. A PSCredential is required"
            ));
        };
        let class_based = arguments
            .iter()
            .any(|(parameter, value)| eq_ignore_case(parameter, "ClassBased") && value.is_none());
        if class_based && self.edition == Edition::Core {
            return Ok(PsValue::Credential {
                user: user.clone(),
                password: password.clone(),
            });
        }
        Ok(PsValue::Cim {
            class: "MSFT_Credential".to_owned(),
            properties: vec![
                ("UserName".to_owned(), PsValue::Str(user.clone())),
                ("Password".to_owned(), PsValue::Str(password.clone())),
            ],
        })
    }

    /// `-Name value` pairs; a switch has no value.
    fn arguments(&self, command: Node) -> Result<Arguments, String> {
        let mut out: Arguments = Vec::new();
        let Some(elements) = command.child_by_field_name("command_elements") else {
            return Ok(out);
        };
        let mut cursor = elements.walk();
        for element in elements.named_children(&mut cursor) {
            match element.kind() {
                "command_argument_sep" | "comment" => {}
                "command_parameter" => {
                    let name = self.evaluator.text(element);
                    out.push((
                        name.trim_start_matches('-')
                            .trim_end_matches(':')
                            .to_owned(),
                        None,
                    ));
                }
                _ => {
                    let value = self.evaluator.eval(element)?;
                    match out.last_mut() {
                        Some((_, slot @ None)) => *slot = Some(value),
                        _ => {
                            return Err(format!(
                                "pwshlib-sim: positional argument `{}` not supported",
                                excerpt(self.evaluator.text(element))
                            ))
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

fn is_constructor(name: &str) -> bool {
    [
        "New-PsCredential",
        "New-PwshlibCredentialInstance",
        "New-CimInstance",
        "New-PwshlibEmbeddedInstance",
        "New-PwshlibEmbeddedInstanceArray",
    ]
    .iter()
    .any(|constructor| eq_ignore_case(name, constructor))
}

fn command_name(command: Node) -> Node {
    command
        .child_by_field_name("command_name")
        .unwrap_or(command)
}

/// Descends through single-child wrappers to the `variable` an assignment
/// targets.
fn single_variable(node: Node) -> Option<Node> {
    only_child_of_kind(node, "variable")
}

/// The command of a value that is one command and nothing else.
fn single_command(node: Node) -> Option<Node> {
    only_child_of_kind(node, "command")
}

/// `node`, or what it wraps through single-child nodes, if of `kind`.
fn only_child_of_kind<'tree>(node: Node<'tree>, kind: &str) -> Option<Node<'tree>> {
    let mut node = node;
    loop {
        if node.kind() == kind {
            return Some(node);
        }
        if node.child_count() != 1 {
            return None;
        }
        node = node.child(0)?;
    }
}

fn invocation_from(params: &PsValue) -> Result<Invocation, String> {
    if !matches!(params, PsValue::Hash(_)) {
        return Err("pwshlib-sim: $InvokeParams must be a hashtable literal".to_owned());
    }
    let resource = match params.get("Name") {
        Some(PsValue::Str(name)) if !name.trim().is_empty() => name.clone(),
        _ => return Err("pwshlib-sim: $InvokeParams has no Name".to_owned()),
    };
    let text = params.get("Method").and_then(PsValue::as_str);
    // ValidateSet compares the whole argument, ignoring case: no trimming
    // (DscMethod::parse trims, so the match is checked again untrimmed).
    let method = text.and_then(|m| DscMethod::parse(m).filter(|d| eq_ignore_case(m, d.as_str())));
    let Some(method) = method else {
        return Err(METHOD_REFUSAL.replace("{}", &format!("{:?}", text.unwrap_or(""))));
    };
    let properties = match params.get("Property") {
        Some(PsValue::Hash(entries)) => entries.clone(),
        None | Some(PsValue::Null) => Vec::new(),
        Some(_) => return Err("pwshlib-sim: $InvokeParams.Property must be a hashtable".to_owned()),
    };
    let module = params.get("ModuleName").cloned().unwrap_or(PsValue::Null);
    Ok(Invocation {
        resource,
        method,
        properties,
        module,
        through_invoke_dsc_resource: false,
        lcm_unless_system: false,
        vendored_path: None,
    })
}
