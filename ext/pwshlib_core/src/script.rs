//! Building the Invoke-DscResource script (docs/architecture.md shows its
//! shape), with secret positions tracked as the text is written.
//!
//! One pass produces the real script for PowerShell and, from the recorded
//! secret spans, the redacted rendering for logs: nothing ever searches the
//! finished text for secrets.

use std::ops::Range;
use std::sync::OnceLock;

use uuid::Uuid;

use crate::error::{Error, Result};
use crate::literal::{powershell_type, read_single_quoted, TrackedText};
use crate::templates;
use crate::typedef::{Attribute, Behaviour, MofType, TypeDef, TypeShape};
use crate::value::{Map, Value};
use crate::vendored;

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

    /// `get`, `set` or `test`: how pwshlib 2.x passes the method to
    /// `invoke_dsc_resource`.
    pub fn as_lowercase_str(self) -> &'static str {
        match self {
            DscMethod::Get => "get",
            DscMethod::Set => "set",
            DscMethod::Test => "test",
        }
    }

    /// `get`, `Get`, `GET` … → [`DscMethod::Get`].
    pub fn parse(text: &str) -> Option<DscMethod> {
        [DscMethod::Get, DscMethod::Set, DscMethod::Test]
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

/// What replaces a secret in the redacted rendering: a string literal, so
/// the redacted script still reads as PowerShell.
pub const REDACTION_MARKER: &str = "'#<Sensitive [value redacted]>'";

/// The redacted rendering when every marker tried would let a secret show
/// (only crafted secrets that spell out marker fragments get here). Shorter
/// than the shortest guarded secret, so nothing can leak through it.
pub const REDACTION_FALLBACK: &str = "<#>";

/// Random markers tried after [`REDACTION_MARKER`] before giving up.
const MARKER_ATTEMPTS: usize = 64;

/// Secrets shorter than this are not guarded: `true` and `1` occur anywhere.
pub const GUARDED_SECRET_CHARS: usize = 4;

/// The first line of every script.
pub const HEADER: &str =
    "$script:ErrorActionPreference = 'Stop'\n$script:WarningPreference = 'SilentlyContinue'\n";

/// The last line of every script: the prelude's function makes the call
/// and prints the outcome.
pub const INVOKE_CALL: &str = "Invoke-PwshlibDscResource -InvokeParams $InvokeParams";

/// Appended to [`INVOKE_CALL`] when the agent's environment says
/// `PWSHLIB_DSC_DIRECT=0`: the prelude then calls `Invoke-DscResource`
/// instead of the resource itself (the escape hatch of issue 32). Carried
/// in the script because the host restores its own start environment
/// before every call, so it never sees the agent's current one.
pub const THROUGH_INVOKE_DSC_RESOURCE: &str = " -ThroughInvokeDscResource";

/// The agent's environment variable that turns direct invocation off.
pub const DIRECT_VARIABLE: &str = "PWSHLIB_DSC_DIRECT";

/// Whether `PWSHLIB_DSC_DIRECT` (read on every call, so a change made by
/// Ruby's `ENV` applies to the next call) asks for `Invoke-DscResource`:
/// `0`, `false`, `no` or `off`, in any case.
pub fn direct_disabled_by_env() -> bool {
    std::env::var(DIRECT_VARIABLE).is_ok_and(|value| direct_disabled_by(&value))
}

/// [`direct_disabled_by_env`] of a given value.
pub fn direct_disabled_by(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "0" | "false" | "no" | "off"
    )
}

/// Opens the block that follows the PSModulePath line: everything after
/// that first generated line (credentials, CIM instances, `[DateTime]`
/// casts, the call) runs inside it, so that a failure anywhere still
/// reaches [`RESTORE_MODULE_PATH`]. PowerShell runs a `finally` block when
/// the `try` block ends by a terminating error (the script sets
/// `$ErrorActionPreference = 'Stop'`, so every error is one) or by the
/// pipeline being stopped.
pub const TRY_OPEN: &str = "try {\n";

/// Closes [`TRY_OPEN`]: puts back the machine-level PSModulePath that
/// `Add-PwshlibVendoredModulePath` changed (it returned `$null`, and this
/// does nothing, when it changed nothing).
pub const RESTORE_MODULE_PATH: &str =
    "}\nfinally {\nRestore-PwshlibVendoredModulePath -Previous $PwshlibPSModulePathRestore\n}\n";

/// A finished script: the real text for PowerShell, the byte ranges of every
/// secret literal in it, and the plain texts of those secrets.
///
/// The prelude ([`templates::PRELUDE`], some 14 KB) is not copied in front
/// of each call's lines: a host holding it needs only [`Script::body`], and
/// the whole text is joined on first use (a `--debug` dump, a manager that
/// takes whole scripts). Joining it on every call was a third of the cost
/// of an in-sync Get (`rake bench`).
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// The lines of this call: the whole text when there is no prelude.
    body: String,
    /// Byte ranges of the secret literals in `body`.
    body_spans: Vec<Range<usize>>,
    secrets: Vec<String>,
    /// Whether the text starts with the prelude, in front of `body`.
    with_prelude: bool,
    /// The prelude and the body, joined when first asked for.
    joined: OnceLock<String>,
}

impl PartialEq for Script {
    fn eq(&self, other: &Script) -> bool {
        self.body == other.body
            && self.body_spans == other.body_spans
            && self.secrets == other.secrets
            && self.with_prelude == other.with_prelude
    }
}

impl Script {
    pub fn from_tracked(tracked: TrackedText) -> Script {
        let (body, body_spans, secrets) = tracked.into_parts();
        Script {
            body,
            body_spans,
            secrets,
            with_prelude: false,
            joined: OnceLock::new(),
        }
    }

    /// This script with [`templates::PRELUDE`] in front (it ends with a
    /// newline, a test checks, so the body starts right after it).
    fn with_prelude(self) -> Script {
        Script {
            with_prelude: true,
            joined: OnceLock::new(),
            ..self
        }
    }

    /// How many leading bytes of [`Script::text`] are the prelude.
    fn prelude_len(&self) -> usize {
        if self.with_prelude {
            templates::PRELUDE.len()
        } else {
            0
        }
    }

    /// The whole text PowerShell runs, prelude included. Never log it.
    pub fn text(&self) -> &str {
        if !self.with_prelude {
            return &self.body;
        }
        self.joined.get_or_init(|| {
            let mut text = String::with_capacity(templates::PRELUDE.len() + self.body.len());
            text.push_str(templates::PRELUDE);
            text.push_str(&self.body);
            text
        })
    }

    /// True when the text starts with [`templates::PRELUDE`], so that a host
    /// holding the prelude needs only [`Script::body`].
    pub fn has_prelude(&self) -> bool {
        self.with_prelude
    }

    /// The lines of this call alone: the text after the prelude (all of it
    /// when there is none). Every secret is in here.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// Byte ranges of the secret literals in [`Script::text`], in order.
    pub fn secret_spans(&self) -> Vec<Range<usize>> {
        let shift = self.prelude_len();
        self.body_spans
            .iter()
            .map(|span| span.start + shift..span.end + shift)
            .collect()
    }

    /// Byte ranges of the secret literals in [`Script::body`], in order.
    pub fn body_secret_spans(&self) -> &[Range<usize>] {
        &self.body_spans
    }

    /// The text between the secrets: everything the redacted rendering keeps.
    pub fn public_pieces(&self) -> Vec<&str> {
        let text = self.text();
        let spans = self.secret_spans();
        let mut pieces = Vec::with_capacity(spans.len() + 1);
        let mut at = 0;
        for span in spans {
            pieces.push(&text[at..span.start]);
            at = span.end;
        }
        pieces.push(&text[at..]);
        pieces
    }

    /// The secrets that must not occur in a redacted rendering: those of at
    /// least [`GUARDED_SECRET_CHARS`] characters that the public text does
    /// not itself contain (a secret equal to a public value is public).
    /// Each line of a secret that spans lines counts too: a log may show
    /// one line alone.
    pub fn guarded_secrets(&self) -> Vec<&str> {
        let pieces = self.public_pieces();
        let mut guarded: Vec<&str> = self
            .secrets
            .iter()
            .flat_map(|s| {
                let lines = s
                    .contains(['\n', '\r'])
                    .then(|| s.split(['\n', '\r']).flat_map(|l| [l, l.trim()]))
                    .into_iter()
                    .flatten();
                std::iter::once(s.as_str()).chain(lines)
            })
            .filter(|s| s.chars().count() >= GUARDED_SECRET_CHARS)
            .filter(|s| !pieces.iter().any(|piece| piece.contains(s)))
            .collect();
        guarded.sort_unstable();
        guarded.dedup();
        guarded
    }

    /// Every secret span replaced by `marker`, whatever the marker.
    pub fn redacted_with(&self, marker: &str) -> String {
        self.public_pieces().join(marker)
    }

    /// The text for logs: every secret literal replaced by
    /// [`REDACTION_MARKER`], or, if a secret would then still show (say the
    /// secret is that marker text), by a random marker that lets none show.
    pub fn redacted(&self) -> String {
        if self.body_spans.is_empty() {
            return self.text().to_owned();
        }
        let guarded = self.guarded_secrets();
        let clean = |candidate: &str| !guarded.iter().any(|s| candidate.contains(s));
        let standard = self.redacted_with(REDACTION_MARKER);
        if clean(&standard) {
            return standard;
        }
        (0..MARKER_ATTEMPTS)
            .map(|attempt| self.redacted_with(&random_marker(attempt)))
            .find(|candidate| clean(candidate))
            .unwrap_or_else(|| REDACTION_FALLBACK.to_owned())
    }

    /// The "marked text" form, for the pwshlib 2.x Ruby methods that pass a
    /// script around as one String (`ps_script_content`, `redact_secrets`,
    /// `remove_secret_identifiers`): each secret literal sits between two
    /// copies of a block comment holding a per-process random token. It is
    /// still valid PowerShell. Fails only if the script itself contains the
    /// token, which would make the form ambiguous.
    pub fn marked(&self) -> Result<String> {
        let marker = secret_marker();
        let text = self.text();
        if text.contains(marker_token()) {
            return Err(Error::InvalidValue {
                attribute: "script".into(),
                message: "a value contains pwshlib's secret marker".into(),
            });
        }
        let spans = self.secret_spans();
        let mut out = String::with_capacity(text.len() + 2 * marker.len() * spans.len());
        let mut at = 0;
        for span in spans {
            out.push_str(&text[at..span.start]);
            out.push_str(marker);
            out.push_str(&text[span.clone()]);
            out.push_str(marker);
            at = span.end;
        }
        out.push_str(&text[at..]);
        Ok(out)
    }

    /// Reads the marked text form back. Text without markers is a script
    /// without secrets; an unpaired marker makes the rest of the text secret.
    pub fn from_marked(marked: &str) -> Script {
        let mut text = String::with_capacity(marked.len());
        let mut secret_spans = Vec::new();
        let mut secrets = Vec::new();
        for (index, part) in marked.split(secret_marker()).enumerate() {
            if index % 2 == 1 && !part.is_empty() {
                secret_spans.push(text.len()..text.len() + part.len());
                secrets.push(part.to_owned());
                if let Some((value, length)) = read_single_quoted(part) {
                    if length == part.len() {
                        secrets.push(value);
                    }
                }
            }
            text.push_str(part);
        }
        // A marked text that begins with this build's prelude (what
        // `ps_script_content` returns) keeps the split.
        let prelude_len = templates::PRELUDE.len();
        let with_prelude = text.starts_with(templates::PRELUDE)
            && secret_spans
                .first()
                .is_none_or(|span| span.start >= prelude_len);
        if !with_prelude {
            return Script {
                body: text,
                body_spans: secret_spans,
                secrets,
                with_prelude,
                joined: OnceLock::new(),
            };
        }
        Script {
            body: text[prelude_len..].to_owned(),
            body_spans: secret_spans
                .into_iter()
                .map(|span| span.start - prelude_len..span.end - prelude_len)
                .collect(),
            secrets,
            with_prelude,
            joined: OnceLock::new(),
        }
    }
}

pub(crate) fn random_marker(attempt: usize) -> String {
    let id = Uuid::new_v4();
    // Vary the first and last characters too: a secret can straddle public
    // text and a marker's fixed edges.
    match attempt % 3 {
        0 => format!("'{}'", id.simple()),
        1 => id.as_u128().to_string(),
        _ => format!("\"{}\"", id.simple()),
    }
}

fn marker_token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| format!("PuppetSensitive:{}", Uuid::new_v4().simple()))
}

/// The block comment that brackets each secret in the marked text form.
pub fn secret_marker() -> &'static str {
    static MARKER: OnceLock<String> = OnceLock::new();
    MARKER.get_or_init(|| format!("<#{}#>", marker_token()))
}

/// A fresh PowerShell variable name: `prefix` + a simple UUID.
pub fn random_variable_name(prefix: &str) -> String {
    format!("{prefix}{}", Uuid::new_v4().simple())
}

/// One DSC property to pass: the value as given and the type information
/// the script needs to write it.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeParameter {
    /// The Puppet attribute, e.g. `dsc_ensure`.
    pub attribute: String,
    pub value: Value,
    pub mof_type: Option<MofType>,
    pub mof_is_embedded: bool,
    /// The shape of the attribute's Puppet type: for a CIM instance, the
    /// types of its members (empty and mixed arrays inside instances are
    /// typed from it). `Other` when unknown.
    pub shape: TypeShape,
}

impl InvokeParameter {
    /// The DSC property name: the attribute without `dsc_`.
    pub fn property_name(&self) -> &str {
        self.attribute
            .strip_prefix("dsc_")
            .unwrap_or(&self.attribute)
    }

    pub fn is_credential(&self) -> bool {
        self.mof_type.as_ref().is_some_and(MofType::is_credential)
    }

    pub fn is_datetime(&self) -> bool {
        self.mof_type.as_ref().is_some_and(MofType::is_datetime)
    }

    pub fn is_array(&self) -> bool {
        self.mof_type.as_ref().is_some_and(MofType::is_array)
    }

    /// The CIM class of an embedded instance property (`MSFT_Foo[]` → `MSFT_Foo`).
    pub fn cim_class(&self) -> Option<&str> {
        self.mof_type.as_ref()?.cim_class(self.mof_is_embedded)
    }
}

/// What pwshlib 2.x calls the invocable resource: everything needed to build
/// one script. Converts to and from a Value (a Ruby hash) for the
/// Ruby-visible `invocable_resource` / `ps_script_content` pair.
#[derive(Debug, Clone, PartialEq)]
pub struct InvocableResource {
    /// The type's name (`dsc_psrepository`), as in pwshlib 2.x.
    pub name: Option<String>,
    pub friendly_name: String,
    pub resource_name: String,
    /// `MOF`, `Class`, or None.
    pub implementation: Option<String>,
    pub module_name: String,
    pub module_version: Option<String>,
    pub method: DscMethod,
    /// Empty when the script does not need it (MOF without a version).
    pub vendored_modules_path: String,
    /// In type definition order.
    pub parameters: Vec<InvokeParameter>,
}

/// A parameter's value with what its attribute's type calls secret wrapped
/// in Sensitive: a caller of `invoke_dsc_resource` may pass a
/// Sensitive-typed value as a plain String, and the script must still
/// treat it as a secret span (redacted in the `--debug` dump, guarded in
/// errors). The literal text is the same either way, so the wire is too.
fn secret_by_type(value: &Value, attribute: &Attribute) -> Value {
    if attribute.secrecy.is_public() && !value.is_collection() {
        return value.clone();
    }
    crate::redact::mark(value, &attribute.secrecy)
}

impl InvocableResource {
    /// `should` is a resource hash (Symbol keys, `dsc_` attributes), method
    /// is Get/Set/Test, `vendored_modules_path` comes from the load path.
    ///
    /// Get passes the mandatory-for-get properties plus the run-as
    /// credential; Set and Test pass every `dsc_` property of `should`.
    /// Never passed: `dsc_timeout`, read-only properties, nil values.
    pub fn new(
        typedef: &TypeDef,
        should: &Map,
        method: DscMethod,
        vendored_modules_path: &str,
    ) -> Result<Self> {
        let parameters = typedef
            .attributes
            .iter()
            .filter(|attr| attr.is_dsc_property() && attr.behaviour != Behaviour::ReadOnly)
            .filter(|attr| {
                method != DscMethod::Get
                    || attr.mandatory_for_get
                    || attr.name == "dsc_psdscrunascredential"
            })
            .filter_map(|attr| {
                let value = should.get_named(&attr.name)?;
                (!value.is_nil()).then(|| InvokeParameter {
                    attribute: attr.name.clone(),
                    value: secret_by_type(value, attr),
                    mof_type: attr.mof_type.clone(),
                    mof_is_embedded: attr.mof_is_embedded,
                    shape: attr.shape.clone(),
                })
            })
            .collect();
        Ok(InvocableResource {
            // The type's name, as in pwshlib 2.x (`context.type.definition[:name]`).
            name: Some(typedef.name.clone()),
            friendly_name: typedef.friendly_name.clone(),
            resource_name: typedef.resource_name.clone(),
            implementation: typedef.implementation.clone(),
            module_name: typedef.module_name.clone(),
            module_version: typedef.module_version.clone(),
            method,
            vendored_modules_path: vendored_modules_path.to_owned(),
            parameters,
        })
    }

    /// Like [`InvocableResource::new`], looking the vendored path up on the
    /// load path. Every resource gets it on PSModulePath (a vendored module
    /// may import its vendored siblings by name); it must exist for
    /// Class-based resources and MOF resources with a version, whose
    /// module is loaded from it.
    pub fn from_load_path(
        typedef: &TypeDef,
        should: &Map,
        method: DscMethod,
        load_path: &[String],
    ) -> Result<Self> {
        let path = match vendored::vendored_modules_path(load_path, &typedef.module_name) {
            Ok(path) => path,
            Err(e)
                if needs_vendored_path(
                    typedef.is_class_based(),
                    typedef.module_version.as_ref(),
                ) =>
            {
                return Err(e)
            }
            Err(_) => String::new(),
        };
        InvocableResource::new(typedef, should, method, &path)
    }

    /// Marks each parameter's value by its attribute's Puppet type, as
    /// [`InvocableResource::new`] does, when the resource is of `typedef`'s
    /// type: a resource hash built or edited by hand (a pwshlib 2.x
    /// override of `invoke_dsc_resource`) may hold a Sensitive-typed value
    /// as a plain String, and the script must still treat it as a secret
    /// span (redacted in the `--debug` dump). The wire is the same.
    pub fn mark_secrets_by_type(&mut self, typedef: &TypeDef) {
        let same_type = typedef
            .friendly_name
            .eq_ignore_ascii_case(&self.friendly_name)
            && self.name.as_deref().is_none_or(|name| name == typedef.name);
        if !same_type {
            return;
        }
        for parameter in &mut self.parameters {
            if let Some(attribute) = typedef.attribute(&parameter.attribute) {
                parameter.value = secret_by_type(&parameter.value, attribute);
            }
        }
    }

    pub fn is_class_based(&self) -> bool {
        self.implementation
            .as_deref()
            .is_some_and(|i| i.eq_ignore_ascii_case("Class"))
    }

    /// The pwshlib 2.x hash: `name`, the `dscmeta_*` keys,
    /// `dsc_invoke_method` (lowercase), `vendored_modules_path`, and
    /// `parameters`: `{dsc_x: {value:, mof_type:, mof_is_embedded:}}`.
    pub fn to_value(&self) -> Value {
        let text = |s: &Option<String>| s.clone().map(Value::Str).unwrap_or(Value::Nil);
        let mut parameters = Map::new();
        for p in &self.parameters {
            let mut entry = Map::new();
            entry.insert_symbol("value", p.value.clone());
            let mof_type = p.mof_type.as_ref().map(MofType::as_str);
            entry.insert_symbol("mof_type", mof_type.map_or(Value::Nil, Value::str));
            entry.insert_symbol("mof_is_embedded", Value::Bool(p.mof_is_embedded));
            parameters.insert_symbol(&p.attribute, Value::Hash(entry));
        }
        let mut map = Map::new();
        map.insert_symbol("name", text(&self.name));
        map.insert_symbol(
            "dscmeta_resource_friendly_name",
            Value::str(&self.friendly_name),
        );
        map.insert_symbol("dscmeta_resource_name", Value::str(&self.resource_name));
        map.insert_symbol(
            "dscmeta_resource_implementation",
            text(&self.implementation),
        );
        map.insert_symbol("dscmeta_module_name", Value::str(&self.module_name));
        map.insert_symbol("dscmeta_module_version", text(&self.module_version));
        map.insert_symbol(
            "dsc_invoke_method",
            Value::str(self.method.as_str().to_ascii_lowercase()),
        );
        map.insert_symbol(
            "vendored_modules_path",
            Value::str(&self.vendored_modules_path),
        );
        map.insert_symbol("parameters", Value::Hash(parameters));
        Value::Hash(map)
    }

    /// Reads the hash [`InvocableResource::to_value`] writes (Symbol or
    /// String keys).
    pub fn from_value(value: &Value) -> Result<Self> {
        let invalid = |message: String| Error::InvalidValue {
            attribute: "invocable resource".into(),
            message,
        };
        let map = value
            .as_map()
            .ok_or_else(|| invalid("it is not a hash".into()))?;
        let text = |key: &str| -> Option<String> {
            match map.get_named(key)? {
                Value::Str(s) | Value::Symbol(s) => Some(s.clone()),
                _ => None,
            }
        };
        let required = |key: &str| text(key).ok_or_else(|| invalid(format!("it has no {key}")));
        let method_text = required("dsc_invoke_method")?;
        let method = DscMethod::parse(&method_text)
            .ok_or_else(|| invalid(format!("unknown dsc_invoke_method {method_text:?}")))?;
        let mut parameters = Vec::new();
        if let Some(entries) = map.get_named("parameters") {
            let entries = entries
                .as_map()
                .ok_or_else(|| invalid("parameters is not a hash".into()))?;
            for (key, entry) in entries.iter() {
                let attribute = key
                    .key_name()
                    .ok_or_else(|| invalid(format!("parameter key {key} is not a name")))?;
                let entry = entry
                    .as_map()
                    .ok_or_else(|| invalid(format!("parameter {attribute} is not a hash")))?;
                // The 2.x hash has no Puppet type; one given under `type`
                // shapes the value and says where its secrets are.
                let declared_type = entry.get_named("type").and_then(Value::key_name);
                let value = entry.get_named("value").cloned().unwrap_or(Value::Nil);
                let value = match declared_type {
                    Some(puppet_type) => {
                        crate::redact::mark(&value, &crate::redact::secrecy_of_type(puppet_type))
                    }
                    None => value,
                };
                parameters.push(InvokeParameter {
                    attribute: attribute.to_owned(),
                    value,
                    mof_type: entry
                        .get_named("mof_type")
                        .and_then(Value::key_name)
                        .map(MofType::parse),
                    mof_is_embedded: matches!(
                        entry.get_named("mof_is_embedded"),
                        Some(Value::Bool(true))
                    ),
                    shape: declared_type.map(TypeShape::parse).unwrap_or_default(),
                });
            }
        }
        Ok(InvocableResource {
            name: text("name"),
            friendly_name: required("dscmeta_resource_friendly_name")?,
            resource_name: text("dscmeta_resource_name").unwrap_or_default(),
            implementation: text("dscmeta_resource_implementation"),
            module_name: required("dscmeta_module_name")?,
            module_version: text("dscmeta_module_version").filter(|v| !v.is_empty()),
            method,
            vendored_modules_path: text("vendored_modules_path").unwrap_or_default(),
            parameters,
        })
    }

    fn vendored_path(&self) -> Result<&str> {
        if self.vendored_modules_path.is_empty() {
            return Err(Error::MissingVendoredPath {
                module: self.module_name.clone(),
                searched: "no vendored modules path was given".into(),
            });
        }
        Ok(&self.vendored_modules_path)
    }
}

fn needs_vendored_path(class_based: bool, version: Option<&String>) -> bool {
    class_based || version.is_some()
}

/// The generated sections of a script, before they are joined with the
/// templates. The Ruby methods `munge_psmodulepath`, `prepare_credentials`,
/// `prepare_cim_instances` and `invoke_params` each return one of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScriptParts {
    /// Adds the vendored path to PSModulePath (every resource whose vendored
    /// folder is known); empty otherwise.
    pub module_path: String,
    /// `$cred_… = New-PsCredential …` lines.
    pub credentials: TrackedText,
    /// `$cim_… = New-CimInstance …` lines, nested instances first.
    pub cim_instances: TrackedText,
    /// The `$InvokeParams = @{…}` line.
    pub invoke_params: TrackedText,
    /// The call goes through `Invoke-DscResource` (`PWSHLIB_DSC_DIRECT=0`)
    /// rather than to the resource directly.
    pub through_invoke_dsc_resource: bool,
}

impl ScriptParts {
    /// Builds the sections; `names` makes each variable name from a prefix
    /// (`cred_` or `cim_`).
    pub fn build(
        resource: &InvocableResource,
        names: &mut dyn FnMut(&str) -> String,
    ) -> Result<ScriptParts> {
        let mut builder = Builder {
            names,
            credentials: TrackedText::new(),
            cim_instances: TrackedText::new(),
            class_based: resource.is_class_based(),
        };
        let invoke_params = builder.invoke_params(resource)?;
        let module_path = if resource.is_class_based() || !resource.vendored_modules_path.is_empty()
        {
            let path = crate::literal::quote(resource.vendored_path()?).map_err(|_| {
                Error::MissingVendoredPath {
                    module: resource.module_name.clone(),
                    searched: "the vendored path contains a NUL character".into(),
                }
            })?;
            format!("$PwshlibPSModulePathRestore = Add-PwshlibVendoredModulePath -Path {path}\n")
        } else {
            String::new()
        };
        Ok(ScriptParts {
            module_path,
            credentials: builder.credentials,
            cim_instances: builder.cim_instances,
            invoke_params,
            through_invoke_dsc_resource: direct_disabled_by_env(),
        })
    }

    /// Joins the sections with the header and templates into the script.
    pub fn into_script(self) -> Script {
        let mut out = TrackedText::with_capacity(
            HEADER.len()
                + self.module_path.len()
                + TRY_OPEN.len()
                + self.credentials.text().len()
                + self.cim_instances.text().len()
                + self.invoke_params.text().len()
                + INVOKE_CALL.len()
                + THROUGH_INVOKE_DSC_RESOURCE.len()
                + RESTORE_MODULE_PATH.len()
                + 2,
        );
        out.push(HEADER);
        let restores = !self.module_path.is_empty();
        if restores {
            out.push(&self.module_path);
            out.push(TRY_OPEN);
        }
        out.append(self.credentials);
        out.append(self.cim_instances);
        out.append(self.invoke_params);
        ensure_newline(&mut out);
        out.push(INVOKE_CALL);
        if self.through_invoke_dsc_resource {
            out.push(THROUGH_INVOKE_DSC_RESOURCE);
        }
        out.push("\n");
        if restores {
            out.push(RESTORE_MODULE_PATH);
        }
        Script::from_tracked(out).with_prelude()
    }
}

fn ensure_newline(out: &mut TrackedText) {
    if !out.text().ends_with('\n') {
        out.push("\n");
    }
}

/// Builds the script for one invocation, with random variable names.
pub fn build_script(resource: &InvocableResource) -> Result<Script> {
    build_script_with(resource, &mut random_variable_name)
}

/// Builds the script with variable names from `names` (tests use a counter,
/// so that two builds can be compared).
pub fn build_script_with(
    resource: &InvocableResource,
    names: &mut dyn FnMut(&str) -> String,
) -> Result<Script> {
    Ok(ScriptParts::build(resource, names)?.into_script())
}

/// From a type definition, a resource hash, a method and Ruby's load path to
/// the script: the one call the provider's lifecycle needs.
pub fn script_for(
    typedef: &TypeDef,
    should: &Map,
    method: DscMethod,
    load_path: &[String],
) -> Result<Script> {
    build_script(&InvocableResource::from_load_path(
        typedef, should, method, load_path,
    )?)
}

/// Strips Sensitive wrappers, saying whether there were any.
fn peel(value: &Value) -> (&Value, bool) {
    let mut value = value;
    let mut secret = false;
    while let Value::Sensitive(inner) = value {
        value = inner;
        secret = true;
    }
    (value, secret)
}

fn named_entry<'m>(map: &'m Map, name: &str) -> Option<&'m (Value, Value)> {
    map.iter()
        .find(|(k, _)| k.key_name().is_some_and(|n| n.eq_ignore_ascii_case(name)))
}

/// A nested CIM instance: a hash that names its class.
fn is_cim_hash(value: &Value) -> bool {
    peel(value)
        .0
        .as_map()
        .is_some_and(|m| named_entry(m, "cim_instance_type").is_some())
}

/// A credential nested in a CIM instance: a hash of exactly user and password.
fn is_credential_hash(value: &Value) -> bool {
    peel(value).0.as_map().is_some_and(|m| {
        m.len() == 2 && named_entry(m, "user").is_some() && named_entry(m, "password").is_some()
    })
}

struct Builder<'n> {
    names: &'n mut dyn FnMut(&str) -> String,
    credentials: TrackedText,
    cim_instances: TrackedText,
    /// A class-based resource: its embedded instances are made by the
    /// prelude's `New-PwshlibEmbeddedInstance` (see [`Builder::instance_command`]).
    class_based: bool,
}

/// Makes a CIM instance: what a MOF resource's embedded instances are, on
/// Windows PowerShell 5.1 and PowerShell 7 alike (its parameters are typed
/// `CimInstance`).
const NEW_CIM_INSTANCE: &str = " = New-CimInstance -ClientOnly -ClassName ";
/// Makes a class-based resource's embedded instance: the prelude's function
/// decides at run time between a CIM instance (Windows PowerShell 5.1, whose
/// LCM needs one) and a hashtable (PowerShell 7, where
/// PSDesiredStateConfiguration 2.x assigns the value to the class instance's
/// property and PowerShell converts a hashtable to the property's class;
/// it cannot convert a CIM instance, and pwsh on Linux has no
/// New-CimInstance at all). Issue 31, item 14.
const NEW_EMBEDDED_INSTANCE: &str = " = New-PwshlibEmbeddedInstance -ClassName ";

impl Builder<'_> {
    fn invoke_params(&mut self, resource: &InvocableResource) -> Result<TrackedText> {
        // Most parameter lines of a Get or a Set fit in this.
        let mut out = TrackedText::with_capacity(512);
        out.push("$InvokeParams = @{Name = ");
        out.string(&resource.friendly_name, "Name")?;
        out.push("; Method = ");
        out.string(resource.method.as_str(), "Method")?;
        out.push("; Property = @{");
        for (i, parameter) in resource.parameters.iter().enumerate() {
            if i > 0 {
                out.push("; ");
            }
            out.key(&Value::str(parameter.property_name()), &parameter.attribute)?;
            out.push(" = ");
            self.property_value(&mut out, parameter)?;
        }
        out.push("}; ModuleName = ");
        match &resource.module_version {
            Some(version) => {
                out.push("@{ModuleName = ");
                if resource.is_class_based() {
                    out.string(&resource.module_name, "ModuleName")?;
                } else {
                    let module = &resource.module_name;
                    let path = format!("{}/{module}/{module}.psd1", resource.vendored_path()?);
                    out.string(&path, "ModuleName")?;
                }
                out.push("; RequiredVersion = ");
                out.string(version, "RequiredVersion")?;
                out.push("}");
            }
            None => out.string(&resource.module_name, "ModuleName")?,
        }
        out.push("}\n");
        Ok(out)
    }

    fn property_value(&mut self, out: &mut TrackedText, parameter: &InvokeParameter) -> Result<()> {
        let attribute = parameter.attribute.as_str();
        let (value, secret) = peel(&parameter.value);
        if parameter.is_credential() {
            if value.is_nil() {
                out.push("$null");
                return Ok(());
            }
            let variable = self.credential(value, secret, attribute)?;
            out.push("$");
            out.push(&variable);
            return Ok(());
        }
        if let Some(class) = parameter.cim_class() {
            let class = class.to_owned();
            let shape = parameter.shape.element();
            return match value {
                Value::Nil => {
                    out.push("$null");
                    Ok(())
                }
                Value::Array(items) => {
                    let variables = items
                        .iter()
                        .map(|item| self.cim_instance(Some(&class), item, secret, attribute, shape))
                        .collect::<Result<Vec<_>>>()?;
                    self.instance_array(out, &variables);
                    Ok(())
                }
                Value::Hash(_) => {
                    let variable =
                        self.cim_instance(Some(&class), value, secret, attribute, shape)?;
                    if parameter.is_array() {
                        self.instance_array(out, &[variable]);
                    } else {
                        out.push("$");
                        out.push(&variable);
                    }
                    Ok(())
                }
                other => Err(Error::InvalidValue {
                    attribute: attribute.to_owned(),
                    message: format!(
                        "a {class} CIM instance must be a hash (or an array of hashes), not {}",
                        kind_name(other)
                    ),
                }),
            };
        }
        out.maybe_secret(secret, |w| match value {
            Value::Array(items) if items.is_empty() => {
                match &parameter.mof_type {
                    Some(mof_type) => {
                        w.push("[");
                        w.push(powershell_type(
                            mof_type.element(),
                            parameter.mof_is_embedded,
                        ));
                        w.push("[]]@()");
                    }
                    None => w.push("@()"),
                }
                Ok(())
            }
            _ if parameter.is_datetime() => datetime_value(w, value, attribute),
            _ => w.value(value, attribute),
        })
    }

    /// `$cred_… = New-PsCredential -User '…' -Password '…'`; the password is
    /// always a secret, the user when it is Sensitive.
    fn credential(&mut self, value: &Value, secret: bool, attribute: &str) -> Result<String> {
        let (_, hash_secret) = peel(value);
        let secret = secret || hash_secret;
        let (user, user_secret, password) = credential_parts(value, attribute)?;
        let variable = (self.names)("cred_");
        let mut line = TrackedText::new();
        line.push("$");
        line.push(&variable);
        line.push(" = New-PsCredential -User ");
        line.maybe_secret(secret || user_secret, |w| w.string(user, attribute))?;
        line.push(" -Password ");
        line.secret_string(password, attribute)?;
        line.push("\n");
        self.credentials.append(line);
        Ok(variable)
    }

    /// `$cim_… = New-CimInstance -ClientOnly -ClassName '…' -Property @{…}`,
    /// after the lines of the instances nested in it. A top-level instance
    /// takes its class from the attribute's mof_type, a nested one from its
    /// `cim_instance_type` key (which is not passed as a property). `shape`
    /// is the instance's Struct type, when known, for its members' types.
    ///
    /// `New-CimInstance -ClientOnly -Property` makes each entry a property
    /// with `CimProperty.Create(name, value, flags)`, which infers the CIM
    /// type from the .NET value (MMI's `CimConverter`) and throws
    /// ArgumentException when it cannot: for `$null`, a hashtable, a
    /// PSCredential, an untyped empty array (`object[]` has no element
    /// type to go by) and an untyped array whose items are of more than one
    /// CIM type (`@(1, 'a')`, or Int32 and Int64). Typed arrays (`[string[]]`,
    /// `[CimInstance[]]`) are typed by their element type. Same in Windows
    /// PowerShell 5.1 and PowerShell 7: both use that cmdlet and MMI. So
    /// here nil members are left out, empty arrays are typed from the
    /// Puppet type (or left out when it does not say), mixed arrays are
    /// typed from it (or refused), credentials become MSFT_Credential
    /// instances, and a plain hash is refused, naming its path.
    fn cim_instance(
        &mut self,
        class: Option<&str>,
        value: &Value,
        secret: bool,
        attribute: &str,
        shape: &TypeShape,
    ) -> Result<String> {
        let (value, instance_secret) = peel(value);
        let secret = secret || instance_secret;
        let map = value.as_map().ok_or_else(|| Error::InvalidValue {
            attribute: attribute.to_owned(),
            message: format!("a CIM instance must be a hash, not {}", kind_name(value)),
        })?;
        let type_entry = named_entry(map, "cim_instance_type");
        let (class_name, class_secret) = match (class, type_entry) {
            (Some(class), _) => (class.to_owned(), false),
            (None, Some((_, type_value))) => {
                let (type_value, type_secret) = peel(type_value);
                let name = type_value.key_name().ok_or_else(|| Error::InvalidValue {
                    attribute: attribute.to_owned(),
                    message: "cim_instance_type must be a string".into(),
                })?;
                (name.to_owned(), secret || type_secret)
            }
            (None, None) => {
                return Err(Error::InvalidValue {
                    attribute: attribute.to_owned(),
                    message: "a nested CIM instance needs a cim_instance_type".into(),
                })
            }
        };
        let mut properties = TrackedText::new();
        properties.maybe_secret(secret, |w| w.refuse_case_duplicate_keys(map, attribute))?;
        properties.push("@{");
        let mut first = true;
        for (key, property) in map.iter() {
            if type_entry.is_some_and(|(k, _)| std::ptr::eq(k, key)) {
                continue;
            }
            let member_shape = key
                .key_name()
                .and_then(|name| shape.member(name))
                .unwrap_or(&TypeShape::Other);
            let (inner, _) = peel(property);
            let empty_array_type = match inner {
                // New-CimInstance cannot type $null: the member is left
                // out, which is what nil means to a DSC resource anyway.
                Value::Nil => continue,
                Value::Array(items) if items.is_empty() => {
                    match member_shape.element().cim_element_type() {
                        Some(element) => Some(element),
                        // Nothing to type it by: left out, as nil is.
                        None => continue,
                    }
                }
                _ => None,
            };
            if !first {
                properties.push("; ");
            }
            first = false;
            let child = match key.key_name() {
                Some(name) => format!("{attribute}.{name}"),
                None => attribute.to_owned(),
            };
            properties.maybe_secret(secret, |w| w.key(key, &child))?;
            properties.push(" = ");
            match empty_array_type {
                Some(element) => properties.maybe_secret(secret, |w| {
                    w.push("[");
                    w.push(element);
                    w.push("[]]@()");
                }),
                None => {
                    self.nested_value(&mut properties, property, secret, &child, member_shape)?
                }
            }
        }
        properties.push("}");
        let variable = (self.names)("cim_");
        let mut line = TrackedText::new();
        line.push("$");
        line.push(&variable);
        line.push(self.instance_command());
        line.maybe_secret(class_secret, |w| w.string(&class_name, attribute))?;
        line.push(" -Property ");
        line.append(properties);
        line.push("\n");
        self.cim_instances.append(line);
        Ok(variable)
    }

    /// ` = ` and the command (with its `-ClassName ` switch) that makes one
    /// embedded instance of this resource: what follows the variable.
    fn instance_command(&self) -> &'static str {
        if self.class_based {
            NEW_EMBEDDED_INSTANCE
        } else {
            NEW_CIM_INSTANCE
        }
    }

    /// An array of embedded instances (the variables that hold them). A MOF
    /// resource's is `[CimInstance[]]@($a, $b)`. A class-based resource's
    /// is a variable set by the prelude's
    /// `New-PwshlibEmbeddedInstanceArray`, which makes that same
    /// `CimInstance[]` on Windows PowerShell 5.1 and a plain array of the
    /// hashtables on PowerShell 7 (a cast to `[CimInstance[]]` would fail
    /// there: a hashtable does not convert to a CIM instance).
    fn instance_array(&mut self, out: &mut TrackedText, variables: &[String]) {
        let mut items = String::new();
        for (i, variable) in variables.iter().enumerate() {
            if i > 0 {
                items.push_str(", ");
            }
            items.push('$');
            items.push_str(variable);
        }
        if !self.class_based {
            out.push("[CimInstance[]]@(");
            out.push(&items);
            out.push(")");
            return;
        }
        let variable = (self.names)("cim_");
        let mut line = TrackedText::new();
        line.push("$");
        line.push(&variable);
        line.push(" = New-PwshlibEmbeddedInstanceArray -Instances @(");
        line.push(&items);
        line.push(")\n");
        self.cim_instances.append(line);
        out.push("$");
        out.push(&variable);
    }

    /// A credential inside a CIM instance, as DSC's MOF schemas declare it:
    /// an `MSFT_Credential` instance with `UserName` and `Password`
    /// (New-CimInstance cannot take a PSCredential). The password is always
    /// a secret, the user when it is Sensitive.
    fn credential_instance(
        &mut self,
        value: &Value,
        secret: bool,
        attribute: &str,
    ) -> Result<String> {
        let (user, user_secret, password) = credential_parts(value, attribute)?;
        let variable = (self.names)("cim_");
        let mut line = TrackedText::new();
        line.push("$");
        line.push(&variable);
        line.push(self.instance_command());
        line.push("'MSFT_Credential' -Property @{UserName = ");
        line.maybe_secret(secret || user_secret, |w| w.string(user, attribute))?;
        line.push("; Password = ");
        line.secret_string(password, attribute)?;
        line.push("}\n");
        self.cim_instances.append(line);
        Ok(variable)
    }

    /// A property value inside a CIM instance (never nil: the caller leaves
    /// nil members out): nested instances and credentials become variables,
    /// arrays are typed where New-CimInstance could not type them, a plain
    /// hash is refused, anything else is a literal.
    fn nested_value(
        &mut self,
        out: &mut TrackedText,
        value: &Value,
        secret: bool,
        attribute: &str,
        shape: &TypeShape,
    ) -> Result<()> {
        let (inner, inner_secret) = peel(value);
        let secret = secret || inner_secret;
        if is_cim_hash(inner) {
            let variable = self.cim_instance(None, inner, secret, attribute, shape.element())?;
            out.push("$");
            out.push(&variable);
            return Ok(());
        }
        if is_credential_hash(inner) {
            let variable = self.credential_instance(inner, secret, attribute)?;
            out.push("$");
            out.push(&variable);
            return Ok(());
        }
        match inner {
            Value::Hash(_) => Err(plain_hash_error(attribute)),
            Value::Array(items) => self.nested_array(out, items, secret, attribute, shape),
            _ => out.maybe_secret(secret, |w| w.value(inner, attribute)),
        }
    }

    /// A non-empty array inside a CIM instance. Instances and credentials
    /// become `[CimInstance[]]@($a, $b)`. Scalars stay an untyped literal
    /// when New-CimInstance can type it (one CIM type among the items, as
    /// pwshlib 2.x wrote them), are cast to the Puppet type's element type
    /// when they mix types, and are refused when they mix types and the
    /// type does not say.
    fn nested_array(
        &mut self,
        out: &mut TrackedText,
        items: &[Value],
        secret: bool,
        attribute: &str,
        shape: &TypeShape,
    ) -> Result<()> {
        let instances = items
            .iter()
            .all(|item| is_cim_hash(item) || is_credential_hash(item));
        if instances {
            let mut variables = Vec::with_capacity(items.len());
            for item in items {
                let (item, item_secret) = peel(item);
                variables.push(if is_cim_hash(item) {
                    self.cim_instance(
                        None,
                        item,
                        secret || item_secret,
                        attribute,
                        shape.element(),
                    )?
                } else {
                    self.credential_instance(item, secret || item_secret, attribute)?
                });
            }
            self.instance_array(out, &variables);
            return Ok(());
        }
        for item in items {
            match peel(item).0 {
                Value::Hash(_) => return Err(plain_hash_error(attribute)),
                Value::Array(_) => {
                    return Err(Error::InvalidValue {
                        attribute: attribute.to_owned(),
                        message: NESTED_ARRAY.into(),
                    })
                }
                _ => {}
            }
        }
        let kinds = cim_kinds(items);
        if kinds <= 1 {
            return out.maybe_secret(secret, |w| {
                w.value(&Value::Array(items.to_vec()), attribute)
            });
        }
        let Some(element) = shape.element().cim_element_type() else {
            return Err(Error::InvalidValue {
                attribute: attribute.to_owned(),
                message: MIXED_ARRAY.into(),
            });
        };
        out.maybe_secret(secret, |w| {
            w.push("[");
            w.push(element);
            w.push("[]]");
            w.value(&Value::Array(items.to_vec()), attribute)
        })
    }
}

/// Why an array of arrays is refused.
const NESTED_ARRAY: &str =
    "an array inside an array cannot be a CIM property (CIM has no arrays of arrays)";
/// Why an array of mixed kinds with no element type is refused.
const MIXED_ARRAY: &str =
    "an array that mixes value types (say numbers and strings) cannot be a CIM property: New-CimInstance cannot tell its CIM type, and the Puppet type does not say";
/// Why a plain hash inside a CIM instance is refused.
const PLAIN_HASH_IN_CIM: &str =
    "a hash inside a CIM instance must be a CIM instance (with a cim_instance_type) or a credential (user and password): New-CimInstance cannot pass a plain hashtable as a CIM property";

fn plain_hash_error(attribute: &str) -> Error {
    Error::InvalidValue {
        attribute: attribute.to_owned(),
        message: PLAIN_HASH_IN_CIM.into(),
    }
}

/// The user, whether it is Sensitive, and the password of a credential hash.
fn credential_parts<'v>(value: &'v Value, attribute: &str) -> Result<(&'v str, bool, &'v str)> {
    let invalid = |message: &str| Error::InvalidValue {
        attribute: attribute.to_owned(),
        message: message.to_owned(),
    };
    let map = peel(value)
        .0
        .as_map()
        .ok_or_else(|| invalid("a credential must be a hash with 'user' and 'password'"))?;
    let member = |name: &str| -> Result<(&'v str, bool)> {
        let (_, raw) = named_entry(map, name)
            .ok_or_else(|| invalid("a credential must be a hash with 'user' and 'password'"))?;
        let (inner, is_secret) = peel(raw);
        match inner {
            Value::Str(s) | Value::Symbol(s) => Ok((s, is_secret)),
            _ => Err(invalid(
                "a credential's 'user' and 'password' must be strings",
            )),
        }
    };
    let (user, user_secret) = member("user")?;
    let (password, _) = member("password")?;
    Ok((user, user_secret, password))
}

/// How many CIM types the items of an untyped array literal have, as MMI's
/// `CimConverter` counts them: PowerShell reads an integer literal as
/// Int32, or Int64 beyond Int32's range, or Decimal beyond that; a float
/// as Double. Nil items have no type and are not counted.
fn cim_kinds(items: &[Value]) -> usize {
    let mut kinds: Vec<&'static str> = Vec::new();
    for item in items {
        let kind = match peel(item).0 {
            Value::Nil => continue,
            Value::Bool(_) => "bool",
            Value::Int(i) if i32::try_from(*i).is_ok() => "int32",
            Value::Int(_) => "int64",
            Value::BigInt(_) => "decimal",
            Value::Float(_) => "double",
            Value::Str(_) | Value::Symbol(_) => "string",
            Value::Timestamp(_) => "datetime",
            Value::Array(_) | Value::Hash(_) | Value::Sensitive(_) => "other",
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds.len()
}

/// A DateTime property: Timestamps and date-time strings become
/// `[DateTime]'…'`, arrays of them element by element.
fn datetime_value(out: &mut TrackedText, value: &Value, attribute: &str) -> Result<()> {
    match value {
        Value::Str(text) => out.datetime_text(text, attribute),
        Value::Array(items) => {
            out.push("@(");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(", ");
                }
                let (item, secret) = peel(item);
                out.maybe_secret(secret, |w| datetime_value(w, item, attribute))?;
            }
            out.push(")");
            Ok(())
        }
        other => out.value(other, attribute),
    }
}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nil",
        Value::Bool(_) => "a boolean",
        Value::Int(_) | Value::BigInt(_) | Value::Float(_) => "a number",
        Value::Str(_) | Value::Symbol(_) => "a string",
        Value::Array(_) => "an array",
        Value::Hash(_) => "a hash",
        Value::Sensitive(_) => "a Sensitive value",
        Value::Timestamp(_) => "a timestamp",
    }
}
