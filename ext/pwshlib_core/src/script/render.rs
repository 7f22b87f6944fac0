//! Script text rendered from the call as data ([`DscCallData`]): only
//! where text is the interface (a manager that is not pwshlib's host, a
//! provider's `ps_script_content` override and the pwshlib 2.x section
//! methods, `PWSHLIB_DSC_DATA=0`). pwshlib's host receives the value
//! itself, so a call to it renders nothing. The value is checked when it
//! is built (`calling.rs`): every text in it can be quoted.
//!
//! The text is the prelude's interface (docs/behavior.md §7 shows its
//! shape): embedded instances first, each a `$cim_N = …` line (nested
//! ones before the instance that holds them), then the `$InvokeParams`
//! line, then the call of `Invoke-PwshlibDscResource`. Secrets stay
//! variables (`$secret_…`, `$cred_…`), bound beside the text or, for a
//! manager that cannot bind, set by literals in front of it (`inline.rs`).

use super::{
    HEADER, INVOKE_CALL, LCM_UNLESS_SYSTEM, THROUGH_INVOKE_DSC_RESOURCE, VENDORED_PATH_PARAMETER,
};
use crate::call_data::{CallValue, DscCallData, Instance, Route};
use crate::literal::{is_bare_key, push_escaped};

/// Makes a MOF resource's embedded instance: a CIM instance, on Windows
/// PowerShell 5.1 and PowerShell 7 alike (its parameters are typed
/// `CimInstance`).
const NEW_CIM_INSTANCE: &str = " = New-CimInstance -ClientOnly -ClassName ";
/// Makes a class-based resource's embedded instance: the prelude's function
/// decides at run time between a CIM instance (Windows PowerShell 5.1, whose
/// LCM needs one) and a hashtable (PowerShell 7, where
/// PSDesiredStateConfiguration 2.x assigns the value to the class
/// instance's property and PowerShell converts a hashtable to the
/// property's class; it cannot convert a CIM instance, and pwsh on Linux
/// has no New-CimInstance at all).
const NEW_EMBEDDED_INSTANCE: &str = " = New-PwshlibEmbeddedInstance -ClassName ";
/// Makes an embedded `MSFT_Credential` from a bound credential (followed by
/// its variable's name), through the host's compiled code, so that no
/// command receives the password as a string.
const NEW_CREDENTIAL_INSTANCE: &str = " = New-PwshlibCredentialInstance -Credential $";
/// A class-based resource's array of embedded instances: `CimInstance[]`
/// on 5.1, a plain array of the hashtables on 7 (a cast to
/// `[CimInstance[]]` would fail there).
const NEW_EMBEDDED_INSTANCE_ARRAY: &str = " = New-PwshlibEmbeddedInstanceArray -Instances @(";

/// A section of the text and the bound variables it names (without `$`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Section {
    pub text: String,
    pub variables: Vec<String>,
}

impl Section {
    /// `$name` of a variable the script sets itself (`$cim_N`).
    fn local(&mut self, name: &str) {
        self.text.push('$');
        self.text.push_str(name);
    }

    /// `$name` of a bound variable, noted as named here.
    fn variable(&mut self, name: &str) {
        self.text.push('$');
        self.text.push_str(name);
        if !self.variables.iter().any(|known| known == name) {
            self.variables.push(name.to_owned());
        }
    }

    fn append(&mut self, other: Section) {
        self.text.push_str(&other.text);
        for name in other.variables {
            if !self.variables.contains(&name) {
                self.variables.push(name);
            }
        }
    }
}

/// The rendered sections of one call, which pwshlib 2.x offered one by
/// one, and the call's last line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    /// The `$cim_N = …` lines.
    pub cim_instances: Section,
    /// The `$InvokeParams = @{…}` line.
    pub invoke_params: Section,
    /// ` -VendoredPath '…'` when the vendored folder is known, else empty.
    pub module_path: String,
}

impl Rendered {
    /// The whole script of the call (after the prelude), its secrets as
    /// variables.
    pub fn body(&self, route: Route) -> String {
        let mut body = String::with_capacity(
            HEADER.len()
                + self.cim_instances.text.len()
                + self.invoke_params.text.len()
                + INVOKE_CALL.len()
                + THROUGH_INVOKE_DSC_RESOURCE.len()
                + self.module_path.len()
                + 1,
        );
        body.push_str(HEADER);
        body.push_str(&self.cim_instances.text);
        body.push_str(&self.invoke_params.text);
        body.push_str(INVOKE_CALL);
        match route {
            Route::Direct => {}
            Route::Through => body.push_str(THROUGH_INVOKE_DSC_RESOURCE),
            Route::LcmUnlessSystem => body.push_str(LCM_UNLESS_SYSTEM),
        }
        body.push_str(&self.module_path);
        body.push('\n');
        body
    }
}

/// Renders `call`'s sections.
pub fn render(call: &DscCallData) -> Rendered {
    let mut writer = Writer {
        class_based: call.class_based,
        lines: Section::default(),
        count: 0,
    };
    let mut params = Section::default();
    params.text.push_str("$InvokeParams = @{Name = ");
    quote(&mut params.text, &call.name);
    params.text.push_str("; Method = '");
    params.text.push_str(call.method.as_str());
    params.text.push_str("'; Property = ");
    writer.members(&mut params, &call.properties);
    params.text.push_str("; ModuleName = ");
    match &call.module.version {
        Some(version) => {
            params.text.push_str("@{ModuleName = ");
            quote(
                &mut params.text,
                call.module.path.as_deref().unwrap_or(&call.module.name),
            );
            params.text.push_str("; RequiredVersion = ");
            quote(&mut params.text, version);
            params.text.push('}');
        }
        None => quote(&mut params.text, &call.module.name),
    }
    params.text.push_str("}\n");
    let mut module_path = String::new();
    if let Some(folder) = &call.vendored_path {
        module_path.push_str(VENDORED_PATH_PARAMETER);
        quote(&mut module_path, folder);
    }
    Rendered {
        cim_instances: writer.lines,
        invoke_params: params,
        module_path,
    }
}

/// `text` as a single-quoted literal (the value holds no NUL: `calling.rs`
/// refuses it).
fn quote(out: &mut String, text: &str) {
    out.push('\'');
    push_escaped(out, text);
    out.push('\'');
}

/// A hashtable key: bare when PowerShell reads it as a simple name.
fn key(out: &mut String, name: &str) {
    if is_bare_key(name) {
        out.push_str(name);
    } else {
        quote(out, name);
    }
}

struct Writer {
    class_based: bool,
    /// The embedded instances' lines, in the order they must run.
    lines: Section,
    count: usize,
}

impl Writer {
    fn fresh(&mut self) -> String {
        self.count += 1;
        format!("cim_{}", self.count)
    }

    fn value(&mut self, out: &mut Section, value: &CallValue) {
        match value {
            CallValue::Null => out.text.push_str("$null"),
            CallValue::Bool(flag) => out.text.push_str(if *flag { "$true" } else { "$false" }),
            CallValue::Int(whole) => out.text.push_str(&whole.to_string()),
            CallValue::BigInt(text) | CallValue::Real(text) => out.text.push_str(text),
            CallValue::Text(text) => quote(&mut out.text, text),
            CallValue::Array(items) => self.list(out, "@(", items),
            CallValue::Hash(members) => self.members(out, members),
            CallValue::Table(pairs) => {
                out.text.push_str("@{");
                for (i, (table_key, member)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.text.push_str("; ");
                    }
                    self.value(out, table_key);
                    out.text.push_str(" = ");
                    self.value(out, member);
                }
                out.text.push('}');
            }
            CallValue::DateTime(inner) => {
                out.text.push_str("[DateTime]");
                self.value(out, inner);
            }
            CallValue::Typed { element, items } => {
                out.text.push('[');
                out.text.push_str(element);
                out.text.push_str("[]]");
                self.list(out, "@(", items);
            }
            CallValue::Var(name) => out.variable(name),
            CallValue::Instance(instance) => {
                let name = self.instance(instance);
                out.local(&name);
            }
            CallValue::Instances(items) => self.instances(out, items),
            CallValue::CredentialInstance(credential) => {
                let name = self.fresh();
                let mut line = Section::default();
                line.local(&name);
                line.text.push_str(NEW_CREDENTIAL_INSTANCE);
                line.text.push_str(credential);
                line.variables.push(credential.clone());
                if self.class_based {
                    line.text.push_str(" -ClassBased");
                }
                line.text.push('\n');
                self.lines.append(line);
                out.local(&name);
            }
        }
    }

    /// `@{name = value; …}`, the names written as hashtable keys.
    fn members(&mut self, out: &mut Section, members: &[(String, CallValue)]) {
        out.text.push_str("@{");
        for (i, (name, member)) in members.iter().enumerate() {
            if i > 0 {
                out.text.push_str("; ");
            }
            key(&mut out.text, name);
            out.text.push_str(" = ");
            self.value(out, member);
        }
        out.text.push('}');
    }

    fn list(&mut self, out: &mut Section, open: &str, items: &[CallValue]) {
        out.text.push_str(open);
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.text.push_str(", ");
            }
            self.value(out, item);
        }
        out.text.push(')');
    }

    /// `$cim_N = New-CimInstance … -Property @{…}` after the lines of the
    /// instances nested in it; its variable's name.
    fn instance(&mut self, instance: &Instance) -> String {
        let mut properties = Section::default();
        self.members(&mut properties, &instance.properties);
        let name = self.fresh();
        let mut line = Section::default();
        line.local(&name);
        line.text.push_str(if self.class_based {
            NEW_EMBEDDED_INSTANCE
        } else {
            NEW_CIM_INSTANCE
        });
        quote(&mut line.text, &instance.class);
        line.text.push_str(" -Property ");
        line.append(properties);
        line.text.push('\n');
        self.lines.append(line);
        name
    }

    /// An array of embedded instances: `[CimInstance[]]@($a, $b)` for a
    /// MOF resource, the prelude's array for a class-based one.
    fn instances(&mut self, out: &mut Section, items: &[CallValue]) {
        let mut list = Section::default();
        self.list(&mut list, "@(", items);
        if !self.class_based {
            out.text.push_str("[CimInstance[]]");
            out.append(list);
            return;
        }
        let name = self.fresh();
        let mut line = Section::default();
        line.local(&name);
        line.text.push_str(NEW_EMBEDDED_INSTANCE_ARRAY);
        // The items' own `@(` is the parameter's.
        line.append(Section {
            text: list.text[2..].to_owned(),
            variables: list.variables,
        });
        line.text.push('\n');
        self.lines.append(line);
        out.local(&name);
    }
}
