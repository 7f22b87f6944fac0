//! The provider lifecycle (behavior.md §3 and §4 "Errors") as pure Rust over
//! a [`ProviderCallbacks`]. The binding implements the callbacks with Ruby dispatch,
//! so that the overridable methods (`invoke_get_method`, …, `ps_manager`)
//! stay overridable; unit tests implement it with fakes.
//!
//! Rule for implementors: `with_state` must not call back into the provider, and
//! no state borrow is held across a provider call.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use crate::cache::{Identity, IdentityCache, PackedMap};
use crate::canonical::{canonicalize_resource, is_absent, is_empty_value, values_equal};
use crate::error::Error;
use crate::munge::{munge_get_result, parse_json};
use crate::redact::{
    self, attribute_secrecy, mark, mark_attributes, mark_value, shown_resource, Redactor,
};
use crate::script::{DscMethod, Script};
use crate::typedef::TypeDef;
use crate::value::{Map, Value, REDACTED_SENSITIVE};

pub const COLLISION_MESSAGE: &str =
    "The Invoke-DscResource cmdlet is in progress and must return before Invoke-DscResource can be invoked";
pub const COLLISION_MAX_RETRIES: u32 = 5;
pub const COLLISION_DEFAULT_WAIT_SECONDS: f64 = 60.0;
pub const NOT_IN_DESIRED_STATE: &str =
    "DSC reports that this resource is not in the desired state; treating all properties as out-of-sync";

/// What the manager's `execute` returned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecuteOutput {
    pub stdout: Option<String>,
    pub errormessage: Option<String>,
}

/// The answer of `insync?`: nil, `true`, or `false` / `[false, message]`.
#[derive(Debug, Clone, PartialEq)]
pub enum Insync {
    /// `nil`: Puppet compares the values itself.
    UseDefault,
    /// `true`.
    InSync,
    /// `false` without a message, or `[false, message]`, which Puppet shows
    /// as the change.
    OutOfSync(Option<String>),
}

/// Owned per-run provider state.
#[derive(Debug)]
pub struct LifecycleState {
    /// Munged Get results: the system state.
    pub query_results: IdentityCache<PackedMap>,
    /// Canonicalized desired state, kept apart from the system state.
    pub canonicalized: IdentityCache<PackedMap>,
    /// One Test per resource: Some(in desired state), or None when it failed.
    pub test_results: IdentityCache<(Map, Option<bool>)>,
    /// (resource, property) pairs answered `[false, msg]`, whose corrective
    /// second `insync?` call gets nil.
    pub insync_reported: HashSet<(Identity, String)>,
    /// (user, password) pairs that failed to log on in this run.
    pub logon_failures: Vec<(String, String)>,
    /// Resources whose last Set failed.
    pub failed_sets: IdentityCache<String>,
    /// Resources whose Get failed in this run: no further PowerShell call
    /// is made for them, and their Set is marked failed.
    pub failed_gets: IdentityCache<()>,
    /// The timeout of the invocation in progress (2.x `@timeout`).
    pub timeout_ms: Option<u64>,
    pub collision_wait_seconds: f64,
}

impl LifecycleState {
    pub fn new(typedef: &TypeDef) -> Self {
        let namevars: Vec<String> = typedef
            .namevar_attributes()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let namevars = if namevars.is_empty() {
            vec!["name".to_owned()]
        } else {
            namevars
        };
        LifecycleState {
            query_results: IdentityCache::new(namevars.clone()),
            canonicalized: IdentityCache::new(namevars.clone()),
            test_results: IdentityCache::new(namevars.clone()),
            insync_reported: HashSet::new(),
            logon_failures: Vec::new(),
            failed_sets: IdentityCache::new(namevars.clone()),
            failed_gets: IdentityCache::new(namevars),
            timeout_ms: None,
            collision_wait_seconds: COLLISION_DEFAULT_WAIT_SECONDS,
        }
    }

    /// Forgets everything known about a resource's system state (after Set).
    pub fn forget(&mut self, hash: &Map) {
        let id = self.query_results.identity(hash);
        self.query_results.remove(hash);
        self.test_results.remove(hash);
        self.insync_reported.retain(|(i, _)| !id.matches(i));
    }
}

/// Builds and logs a debug message only when debug messages are kept.
fn debug_lazy<P: ProviderCallbacks>(
    provider: &P,
    message: impl FnOnce() -> String,
) -> Result<(), P::Error> {
    if provider.debug_enabled() {
        provider.debug(&message())
    } else {
        Ok(())
    }
}

pub trait ProviderCallbacks {
    type Error: From<Error>;

    fn typedef(&self) -> Result<Arc<TypeDef>, Self::Error>;
    fn with_state<R>(&self, f: impl FnOnce(&mut LifecycleState) -> R) -> R;

    // The overridable provider methods (Ruby dispatch in the binding).
    fn invoke_get_method(&self, name_hash: &Map) -> Result<Option<Map>, Self::Error>;
    fn invoke_set_method(&self, name: &Value, should: &Map) -> Result<(), Self::Error>;
    fn invoke_test_method(&self, name: &Value, should: &Map) -> Result<Insync, Self::Error>;
    fn invoke_dsc_resource(
        &self,
        name_hash: &Map,
        props: &Map,
        method: DscMethod,
    ) -> Result<Option<Value>, Self::Error>;
    /// `ps_manager.execute(script, timeout_ms)`.
    fn execute(&self, script: &str, timeout_ms: Option<u64>) -> Result<ExecuteOutput, Self::Error>;
    /// Sends one invocation script. The binding lets a manager that holds
    /// the prelude take only [`Script::body`]; by default the whole text.
    fn execute_script(
        &self,
        script: &Script,
        timeout_ms: Option<u64>,
    ) -> Result<ExecuteOutput, Self::Error> {
        self.execute(script.text(), timeout_ms)
    }

    fn load_path(&self) -> Result<Vec<String>, Self::Error>;
    /// The module's vendored `dsc_resources` folder, found along
    /// [`ProviderCallbacks::load_path`]. The binding remembers it for the run, so
    /// that a catalog of thousands of resources does not look at the disk
    /// for each call.
    fn vendored_modules_path(
        &self,
        module_name: &str,
    ) -> Result<Result<String, Error>, Self::Error> {
        let load_path = self.load_path()?;
        Ok(crate::vendored::vendored_modules_path(
            &load_path,
            module_name,
        ))
    }
    /// Builds the script of one call. The outer error is the host's, the
    /// inner one is reported against the resource.
    fn build_script(
        &self,
        typedef: &TypeDef,
        props: &Map,
        method: DscMethod,
    ) -> Result<Result<Script, Error>, Self::Error> {
        // As `script::script_for`: Class-based resources and MOF resources
        // with a version name their vendored folder; others need none.
        let path = if typedef.is_class_based() || typedef.module_version.is_some() {
            match self.vendored_modules_path(&typedef.module_name)? {
                Ok(path) => path,
                Err(e) => return Ok(Err(e)),
            }
        } else {
            String::new()
        };
        Ok(
            crate::script::InvocableResource::new(typedef, props, method, &path)
                .and_then(|resource| crate::script::build_script(&resource)),
        )
    }
    fn is_metaparam(&self, name: &str) -> bool;
    /// Whether this (user, password) failed to log on earlier in the run.
    /// The binding shares the memo between its provider instances (one
    /// per type), since a credential is not tied to a type.
    fn logon_failed_already(&self, pair: &(String, String)) -> bool {
        self.with_state(|s| s.logon_failures.contains(pair))
    }
    fn remember_logon_failure(&self, pair: (String, String)) {
        self.with_state(|s| {
            if !s.logon_failures.contains(&pair) {
                s.logon_failures.push(pair);
            }
        })
    }
    fn sleep(&self, seconds: f64) -> Result<(), Self::Error>;
    /// A message for an error raised by a host call (already safe to log
    /// once scrubbed).
    fn describe_error(&self, error: &Self::Error) -> String;

    fn debug(&self, message: &str) -> Result<(), Self::Error>;
    /// False when debug messages would be dropped anyway, so that they are
    /// not built (the script dump alone is the whole script per call).
    fn debug_enabled(&self) -> bool {
        true
    }
    fn notice(&self, title: Option<&Value>, message: &str) -> Result<(), Self::Error>;
    fn warning(&self, title: Option<&Value>, message: &str) -> Result<(), Self::Error>;
    fn err(&self, title: Option<&Value>, message: &str) -> Result<(), Self::Error>;
}

/// The title to name a resource by: the `name` of a hash, or the value.
pub fn title_of(value: &Value) -> Option<Value> {
    match value {
        Value::Hash(map) => map.get_named("name").cloned().or(Some(value.clone())),
        Value::Nil => None,
        other => Some(other.clone()),
    }
}

/// A title for a debug line: a String bare (`Creating 'r0'`, not
/// `Creating '"r0"'`), anything else as Puppet would print it.
pub fn title_text(name: &Value) -> String {
    match title_of(name) {
        Some(Value::Str(s)) | Some(Value::Symbol(s)) => s,
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn title_of_map(map: &Map) -> Option<Value> {
    map.get_named("name").filter(|v| !v.is_nil()).cloned()
}

/// A title (String or namevar hash) as a hash.
pub fn name_hash_of(name: &Value) -> Map {
    match name {
        Value::Hash(map) => map.clone(),
        other => Map(vec![(Value::sym("name"), other.clone())]),
    }
}

fn dsc_props(map: &Map) -> Map {
    map.iter()
        .filter(|(k, _)| k.key_name().is_some_and(|n| n.starts_with("dsc_")))
        .cloned()
        .collect()
}

// ---------------------------------------------------------------- canonicalize

pub fn canonicalize<P: ProviderCallbacks>(
    provider: &P,
    resources: Vec<Map>,
) -> Result<Vec<Map>, P::Error> {
    let typedef = provider.typedef()?;
    let mut out = Vec::with_capacity(resources.len());
    for resource in resources {
        if provider.with_state(|s| s.canonicalized.get(&resource).is_some()) {
            // Already canonicalized in this run: this is the target state or
            // a Get result; return it unchanged and at no cost.
            out.push(resource);
            continue;
        }
        debug_lazy(provider, || {
            format!("Canonicalizing {}", shown_resource(&typedef, &resource))
        })?;
        let canonical = if is_absent(resource.get_named("dsc_ensure")) {
            resource.clone()
        } else {
            match get_for_canonicalize(provider, &resource)? {
                Some(system) if !is_absent(system.get_named("dsc_ensure")) => {
                    canonicalize_resource(&typedef, &resource, &system, &|n| {
                        provider.is_metaparam(n)
                    })
                }
                _ => resource.clone(),
            }
        };
        let packed = PackedMap::pack(&canonical);
        provider.with_state(|s| s.canonicalized.insert(&resource, packed));
        out.push(canonical);
    }
    debug_lazy(provider, || {
        let shown_out: Vec<Value> = out
            .iter()
            .map(|m| Value::Hash(mark_attributes(&typedef, m)))
            .collect();
        format!(
            "Canonicalized Resources: {}",
            redact::shown(&Value::Array(shown_out))
        )
    })?;
    Ok(out)
}

/// 2.x `invoke_get_method_for_canonicalize`: the run's one Get, from the
/// cache when this resource was already queried.
pub fn get_for_canonicalize<P: ProviderCallbacks>(
    provider: &P,
    resource: &Map,
) -> Result<Option<Map>, P::Error> {
    if let Some(cached) =
        provider.with_state(|s| s.query_results.get(resource).map(PackedMap::unpack))
    {
        return Ok(Some(cached));
    }
    if get_failed(provider, resource) {
        return Ok(None);
    }
    let result = provider.invoke_get_method(resource)?;
    if result.is_none() {
        provider.with_state(|s| s.failed_gets.insert(resource, ()));
    }
    Ok(result)
}

/// Whether this resource's Get failed earlier in the run (already reported).
pub fn get_failed<P: ProviderCallbacks>(provider: &P, resource: &Map) -> bool {
    provider.with_state(|s| s.failed_gets.get(resource).is_some())
}

/// The message of the error that marks a resource whose Get failed as
/// failed, instead of a blind Set.
pub fn get_failed_message(typedef: &TypeDef, title: Option<&Value>) -> String {
    let title = title.map(shown).unwrap_or_default();
    format!(
        "{}[{title}]: not applied, because its current state could not be read (the DSC Get failed; see the error above)",
        typedef.name
    )
}

// ---------------------------------------------------------------------- get

/// Attributes a Get query carries over from the canonicalized resource.
fn query_for(typedef: &TypeDef, name_hash: &Map, canonical: Option<&Map>) -> Map {
    // The whole canonicalized resource goes along, as it does when
    // canonicalize makes the Get: the mandatory-for-get properties and the
    // credential for the call, the rest for munging and for knowing secrets.
    let _ = typedef;
    let mut query = name_hash.clone();
    if let Some(canonical) = canonical {
        for (key, value) in canonical.iter() {
            if let Some(name) = key.key_name() {
                if query.get_named(name).is_none() {
                    query.insert_symbol(name, value.clone());
                }
            }
        }
    }
    query
}

pub fn get<P: ProviderCallbacks>(
    provider: &P,
    names: Option<Vec<Value>>,
) -> Result<Vec<Map>, P::Error> {
    debug_lazy(provider, || {
        "Collecting data from the DSC Resource".to_owned()
    })?;
    let typedef = provider.typedef()?;
    let mut out = Vec::new();
    for name in names.unwrap_or_default() {
        let name_hash = name_hash_of(&name);
        if let Some(mut cached) =
            provider.with_state(|s| s.query_results.get(&name_hash).map(PackedMap::unpack))
        {
            // The cached Get may have been made for a hash titled `title:`;
            // Puppet matches results on the namevars it asked for.
            if let Some(name) = name_hash.get_named("name").filter(|v| !v.is_nil()) {
                cached.insert_symbol("name", name.clone());
            }
            out.push(cached);
            continue;
        }
        if get_failed(provider, &name_hash) {
            // Reported already: no second call. The title alone keeps
            // Puppet going; `set` then marks the resource failed.
            out.push(name_hash);
            continue;
        }
        let canonical =
            provider.with_state(|s| s.canonicalized.get(&name_hash).map(PackedMap::unpack));
        let query = query_for(&typedef, &name_hash, canonical.as_ref());
        match provider.invoke_get_method(&query)? {
            Some(result) => out.push(result),
            None => {
                provider.with_state(|s| s.failed_gets.insert(&query, ()));
                out.push(name_hash);
            }
        }
    }
    Ok(out)
}

pub fn invoke_get_method<P: ProviderCallbacks>(
    provider: &P,
    name_hash: &Map,
) -> Result<Option<Map>, P::Error> {
    let typedef = provider.typedef()?;
    debug_lazy(provider, || {
        format!("retrieving {}", shown_resource(&typedef, name_hash))
    })?;
    let mandatory: HashSet<&str> = typedef.mandatory_get_attributes().into_iter().collect();
    let query_props: Map = name_hash
        .iter()
        .filter(|(k, v)| match k.key_name() {
            Some("dsc_psdscrunascredential") => !v.is_nil(),
            Some(n) => mandatory.contains(n),
            None => false,
        })
        .cloned()
        .collect();
    let Some(data) = provider.invoke_dsc_resource(name_hash, &query_props, DscMethod::Get)? else {
        return Ok(None);
    };
    let title = title_of_map(name_hash);
    let Value::Hash(data) = data else {
        provider.err(
            title.as_ref(),
            "Invoke-DscResource Get returned a value that is not an object",
        )?;
        return Ok(None);
    };
    let (mut munged, errors) = munge_get_result(&typedef, name_hash, &data);
    if !errors.is_empty() {
        // The messages quote values the system reported: its secrets too.
        let mut redactor = redactor_for(&typedef, &[name_hash]);
        redactor.add_value(&Value::Hash(mark_attributes(&typedef, &data)));
        for message in errors {
            provider.err(title.as_ref(), &redactor.scrub(&message))?;
        }
    }
    for (key, value) in munged.iter_mut() {
        let should = key.key_name().and_then(|k| name_hash.get_named(k));
        *value = mirror_sensitivity(value, should.unwrap_or(&Value::Nil));
    }
    // Sensitive-typed values go back to Puppet as Sensitive, as the type
    // schema wants them: Puppet logs the current state it is given.
    let munged = mark_attributes(&typedef, &munged);
    let packed = PackedMap::pack(&munged);
    provider.with_state(|s| s.query_results.insert(name_hash, packed));
    debug_lazy(provider, || {
        format!(
            "Returned to Puppet as {}",
            shown_resource(&typedef, &munged)
        )
    })?;
    Ok(Some(munged))
}

/// Wraps the parts of a system value that are secret in the desired value
/// (or sit under a `password` key) in Sensitive, so they are never shown.
pub fn mirror_sensitivity(is: &Value, should: &Value) -> Value {
    match (is, should) {
        (Value::Nil, _) | (Value::Sensitive(_), _) => is.clone(),
        (_, Value::Sensitive(_)) => Value::Sensitive(Box::new(is.clone())),
        (Value::Hash(is_map), _) => {
            let should_map = should.as_map();
            Value::Hash(
                is_map
                    .iter()
                    .map(|(k, v)| {
                        let name = k.key_name().unwrap_or_default();
                        let counterpart = should_map
                            .and_then(|m| {
                                m.iter()
                                    .find(|(sk, _)| {
                                        sk.key_name().is_some_and(|s| s.eq_ignore_ascii_case(name))
                                    })
                                    .map(|(_, sv)| sv)
                            })
                            .unwrap_or(&Value::Nil);
                        let v = mirror_sensitivity(v, counterpart);
                        let v = if name.eq_ignore_ascii_case("password")
                            && !v.is_nil()
                            && !matches!(v, Value::Sensitive(_))
                        {
                            Value::Sensitive(Box::new(v))
                        } else {
                            v
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            )
        }
        (Value::Array(items), _) => {
            let secret_items = should
                .as_array()
                .is_some_and(|a| a.iter().any(Value::contains_sensitive));
            Value::Array(
                items
                    .iter()
                    .map(|i| {
                        if secret_items && !i.is_nil() {
                            Value::Sensitive(Box::new(i.clone()))
                        } else {
                            mirror_sensitivity(i, &Value::Nil)
                        }
                    })
                    .collect(),
            )
        }
        _ => is.clone(),
    }
}

// ------------------------------------------------------------ set and insync?

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetAction {
    Create,
    Update,
    Delete,
}

impl SetAction {
    pub fn method_name(self) -> &'static str {
        match self {
            SetAction::Create => "create",
            SetAction::Update => "update",
            SetAction::Delete => "delete",
        }
    }
    pub fn context_method(self) -> &'static str {
        match self {
            SetAction::Create => "creating",
            SetAction::Update => "updating",
            SetAction::Delete => "deleting",
        }
    }
}

/// behavior.md §3 "set": compares `dsc_ensure` case-insensitively.
pub fn set_action(typedef: &TypeDef, is: Option<&Map>, should: &Map) -> SetAction {
    if typedef.attribute("dsc_ensure").is_none() {
        return SetAction::Update;
    }
    let text = |v: Option<&Value>, default: &str| match v {
        Some(Value::Str(s)) | Some(Value::Symbol(s)) => s.to_lowercase(),
        _ => default.to_owned(),
    };
    let is_ensure = text(is.and_then(|m| m.get_named("dsc_ensure")), "absent");
    let should_ensure = text(should.get_named("dsc_ensure"), "present");
    match (is_ensure.as_str(), should_ensure.as_str()) {
        ("absent", "present") => SetAction::Create,
        ("present", "absent") => SetAction::Delete,
        _ => SetAction::Update,
    }
}

/// What `delete` sends: the title plus the mandatory-for-set properties,
/// the run-as credential and the timeout from the canonicalized resource,
/// with `Ensure = 'Absent'`.
pub fn delete_should<P: ProviderCallbacks>(provider: &P, name: &Value) -> Result<Map, P::Error> {
    let typedef = provider.typedef()?;
    let mut should = name_hash_of(name);
    if let Some(canonical) =
        provider.with_state(|s| s.canonicalized.get(&should).map(PackedMap::unpack))
    {
        let carried = typedef
            .mandatory_set_attributes()
            .into_iter()
            .chain(typedef.namevar_attributes())
            .chain(["dsc_psdscrunascredential", "dsc_timeout"]);
        for attr in carried {
            if should.get_named(attr).is_none() {
                if let Some(v) = canonical.get_named(attr) {
                    should.insert_symbol(attr, v.clone());
                }
            }
        }
    }
    should.insert_symbol("dsc_ensure", Value::str("Absent"));
    Ok(should)
}

/// The identity of [`invocation_name_hash`]`(name, should)`, without
/// building that hash: an attribute comes from the title's hash, or else
/// from the desired state.
pub fn invocation_identity(namevars: &[String], name: &Value, should: &Map) -> Identity {
    Identity::from_lookup(namevars, |attribute| {
        let from_name = match name {
            Value::Hash(map) => map.get_named(attribute),
            other if attribute == "name" => Some(other),
            _ => None,
        };
        from_name
            .or_else(|| should.get_named(attribute))
            .map(std::borrow::Cow::Borrowed)
    })
}

/// The name hash a Set/Test call runs under: the title merged with the
/// desired state, so the credential and timeout of the resource apply.
fn invocation_name_hash(name: &Value, should: &Map) -> Map {
    let mut hash = name_hash_of(name);
    for (k, v) in should.iter() {
        if let Some(n) = k.key_name() {
            if hash.get_named(n).is_none() {
                hash.insert_symbol(n, v.clone());
            }
        }
    }
    hash
}

pub fn invoke_set_method<P: ProviderCallbacks>(
    provider: &P,
    name: &Value,
    should: &Map,
) -> Result<Option<Value>, P::Error> {
    let title = title_of(name);
    let typedef = provider.typedef()?;
    debug_lazy(provider, || {
        format!(
            "Invoking Set Method for '{}' with {}",
            title_text(name),
            shown_resource(&typedef, should)
        )
    })?;
    let name_hash = invocation_name_hash(name, should);
    provider.with_state(|s| s.failed_sets.remove(&name_hash));
    let apply_props = dsc_props(should);
    let data = provider.invoke_dsc_resource(&name_hash, &apply_props, DscMethod::Set)?;
    provider.with_state(|s| s.forget(&name_hash));
    match &data {
        Some(Value::Hash(result)) => {
            if matches!(result.get_named("rebootrequired"), Some(Value::Bool(true))) {
                provider.warning(
                    title.as_ref(),
                    "A reboot is required to complete the DSC Set of this resource; Puppet does not reboot the node",
                )?;
            }
        }
        Some(_) => {}
        None => provider.with_state(|s| s.failed_sets.insert(&name_hash, "Set failed".into())),
    }
    Ok(data)
}

pub fn invoke_test_method<P: ProviderCallbacks>(
    provider: &P,
    name: &Value,
    should: &Map,
) -> Result<Insync, P::Error> {
    debug_lazy(provider, || {
        format!(
            "Relying on DSC Test method for validating if '{}' is in the desired state",
            title_text(name)
        )
    })?;
    let name_hash = invocation_name_hash(name, should);
    let test_props = dsc_props(should);
    let data = provider.invoke_dsc_resource(&name_hash, &test_props, DscMethod::Test)?;
    let in_desired_state = data
        .as_ref()
        .and_then(Value::as_map)
        .and_then(|m| m.get_named("indesiredstate"))
        .map(|v| matches!(v, Value::Bool(true)));
    provider.with_state(|s| {
        s.test_results
            .insert(&name_hash, (name_hash.clone(), in_desired_state))
    });
    Ok(match in_desired_state {
        None => Insync::UseDefault,
        Some(true) => Insync::InSync,
        Some(false) => Insync::OutOfSync(Some(NOT_IN_DESIRED_STATE.to_owned())),
    })
}

/// A value for a change message: strings bare, secrets as the marker.
fn shown(value: &Value) -> String {
    match value {
        Value::Str(s) => s.clone(),
        Value::Sensitive(_) => REDACTED_SENSITIVE.to_owned(),
        other => other.to_string(),
    }
}

/// `dsc_x changed 'old' to 'new'`, with what the type schema or the desired
/// value calls secret shown as the marker.
fn change_message(typedef: &TypeDef, property: &str, is: &Value, should: &Value) -> String {
    let secrecy = attribute_secrecy(typedef, property);
    let is = mark(&mirror_sensitivity(is, should), &secrecy);
    let should = mark(should, &secrecy);
    Redactor::for_values([&is, &should]).scrub(&format!(
        "{property} changed '{}' to '{}'",
        shown(&is),
        shown(&should)
    ))
}

pub fn insync<P: ProviderCallbacks>(
    provider: &P,
    name: &Value,
    property: &str,
    is_hash: Option<&Map>,
    should_hash: &Map,
) -> Result<Insync, P::Error> {
    let typedef = provider.typedef()?;
    if typedef
        .attribute(property)
        .is_some_and(|a| a.is_ensurable_workaround())
    {
        // Not a DSC property: nothing on the system can differ from it.
        return Ok(Insync::InSync);
    }
    // Every cache of the state has the same namevars: one identity serves
    // them all, made without building the merged name hash.
    let identity =
        provider.with_state(|s| invocation_identity(s.query_results.namevars(), name, should_hash));
    let marker = (identity.clone(), property.to_owned());
    if provider.with_state(|s| s.insync_reported.remove(&marker)) {
        // The corrective-change check that Puppet makes after a change.
        return Ok(Insync::UseDefault);
    }
    if provider.with_state(|s| s.failed_gets.get_identity(&identity).is_some()) {
        // Nothing to compare with, and no Test either: out of sync, so that
        // `set` marks the resource failed.
        provider.with_state(|s| s.insync_reported.insert(marker));
        return Ok(Insync::OutOfSync(Some(format!(
            "{property}: the current state could not be read"
        ))));
    }
    let is_value = match is_hash.and_then(|h| h.get_named(property)) {
        Some(v) => Some(v.clone()),
        None => provider.with_state(|s| {
            s.query_results
                .get_identity(&identity)
                .and_then(|m| m.unpack().remove_named(property))
        }),
    };
    let should_value = should_hash.get_named(property);
    let resource_mode = matches!(
        should_hash.get_named("validation_mode"),
        Some(Value::Str(m)) | Some(Value::Symbol(m)) if m.eq_ignore_ascii_case("resource")
    );
    if resource_mode {
        let cached = provider.with_state(|s| s.test_results.get_identity(&identity).map(|e| e.1));
        let in_desired_state = match cached {
            Some(answer) => answer,
            None => {
                let answer = provider.invoke_test_method(name, should_hash)?;
                let answer = match answer {
                    Insync::InSync => Some(true),
                    Insync::OutOfSync(_) => Some(false),
                    Insync::UseDefault => None,
                };
                let name_hash = invocation_name_hash(name, should_hash);
                provider.with_state(|s| {
                    if s.test_results.get_identity(&identity).is_none() {
                        s.test_results
                            .insert_identity(identity.clone(), (name_hash, answer));
                    }
                });
                answer
            }
        };
        match in_desired_state {
            Some(true) => return Ok(Insync::InSync),
            Some(false) => {
                let message = match should_value {
                    Some(sv) if !values_equal(is_value.as_ref().unwrap_or(&Value::Nil), sv) => {
                        change_message(
                            provider.typedef()?.as_ref(),
                            property,
                            is_value.as_ref().unwrap_or(&Value::Nil),
                            sv,
                        )
                    }
                    _ => NOT_IN_DESIRED_STATE.to_owned(),
                };
                provider.with_state(|s| s.insync_reported.insert(marker));
                return Ok(Insync::OutOfSync(Some(message)));
            }
            None => {} // The Test failed: fall back on comparing properties.
        }
    }
    if !property.starts_with("dsc_") {
        return Ok(Insync::UseDefault);
    }
    let Some(should_value) = should_value.filter(|v| !is_empty_value(v)) else {
        return Ok(Insync::UseDefault);
    };
    let is_value = is_value.unwrap_or(Value::Nil);
    if values_equal(&is_value, should_value) {
        return Ok(Insync::InSync);
    }
    provider.with_state(|s| s.insync_reported.insert(marker));
    Ok(Insync::OutOfSync(Some(change_message(
        provider.typedef()?.as_ref(),
        property,
        &is_value,
        should_value,
    ))))
}

// ------------------------------------------------------------- invocation

/// 2.x `specify_dsc_timeout`: the resource's `dsc_timeout` in ms, for this
/// resource's calls only.
pub fn specify_dsc_timeout(name_hash: &Map) -> Option<u64> {
    match name_hash.get_named("dsc_timeout") {
        Some(Value::Int(secs)) if *secs > 0 => Some((*secs as u64).saturating_mul(1000)),
        Some(Value::Float(secs)) if *secs > 0.0 => Some((*secs * 1000.0) as u64),
        Some(Value::Str(s)) => s.trim().parse::<u64>().ok().map(|v| v.saturating_mul(1000)),
        _ => None,
    }
}

fn credential_pair(value: &Value) -> Option<(String, String)> {
    let map = value.as_map()?;
    let text = |v: &Value| match v.unwrap_sensitive() {
        Value::Str(s) => Some(s),
        _ => None,
    };
    Some((
        text(map.get_named("user")?)?,
        text(map.get_named("password")?).unwrap_or_default(),
    ))
}

pub fn logon_failed_already(state: &LifecycleState, credential: &Value) -> bool {
    credential_pair(credential).is_some_and(|pair| state.logon_failures.contains(&pair))
}

/// The (user, password) pair of a credential hash, the key of the logon
/// failure memo.
pub fn logon_key(credential: &Value) -> Option<(String, String)> {
    credential_pair(credential)
}

/// The redactor for an invocation's own values: every Sensitive value, and
/// every value the type schema calls Sensitive (even given in the clear).
fn redactor_for(typedef: &TypeDef, maps: &[&Map]) -> Redactor {
    let marked: Vec<Value> = maps
        .iter()
        .map(|map| Value::Hash(mark_attributes(typedef, map)))
        .collect();
    Redactor::for_values(&marked)
}

fn excerpt(text: &str) -> String {
    let mut short: String = text.chars().take(120).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

fn is_timeout_report(message: &str) -> bool {
    let lower = message.to_lowercase();
    lower.contains("timeout") && lower.contains("exceeded")
}

enum Outcome {
    Data(Value),
    Failed,
    Collision,
}

pub fn invoke_dsc_resource<P: ProviderCallbacks>(
    provider: &P,
    name_hash: &Map,
    props: &Map,
    method: DscMethod,
) -> Result<Option<Value>, P::Error> {
    let title = title_of_map(name_hash);
    let title = title.as_ref();
    let credential = name_hash
        .get_named("dsc_psdscrunascredential")
        .filter(|c| !c.is_nil())
        .cloned();
    if let Some(credential) = &credential {
        if credential_pair(credential).is_some_and(|pair| provider.logon_failed_already(&pair)) {
            let user = credential_pair(credential).map(|p| p.0).unwrap_or_default();
            provider.err(
                title,
                &format!("Skipping Invoke-DscResource {}: the PSDscRunAsCredential account '{user}' failed to log on earlier in this run", method.as_str()),
            )?;
            return Ok(None);
        }
    }
    let timeout_ms = specify_dsc_timeout(name_hash);
    provider.with_state(|s| s.timeout_ms = timeout_ms);
    let typedef = provider.typedef()?;
    let mut redactor = redactor_for(&typedef, &[name_hash, props]);
    let script = match provider.build_script(&typedef, props, method)? {
        Ok(script) => script,
        Err(e) => {
            provider.err(title, &redactor.scrub(&e.to_string()))?;
            return Ok(None);
        }
    };
    redactor.add_script(&script);
    debug_lazy(provider, || {
        format!(
            "Invoke-DscResource {} for {} ({} {}), properties: {}",
            method.as_str(),
            title.cloned().unwrap_or(Value::Nil),
            typedef.friendly_name,
            typedef.module_version.as_deref().unwrap_or("(no version)"),
            shown_resource(&typedef, props)
        )
    })?;
    debug_lazy(provider, || format!("Script:\n{}", script.redacted()))?;
    let invocation = Invocation {
        title,
        credential: credential.as_ref(),
        script: &script,
        method,
        timeout_ms,
        redactor: &redactor,
    };
    match invocation.run_once(provider)? {
        Outcome::Data(data) => Ok(Some(data)),
        Outcome::Failed => Ok(None),
        Outcome::Collision => invocation.retry_after_collision(provider),
    }
}

/// One DSC call, ready to send (and to send again after a collision).
#[derive(Clone, Copy)]
struct Invocation<'a> {
    title: Option<&'a Value>,
    credential: Option<&'a Value>,
    script: &'a Script,
    method: DscMethod,
    timeout_ms: Option<u64>,
    /// Scrubs every message of the invocation's secrets.
    redactor: &'a Redactor,
}

impl Invocation<'_> {
    fn run_once<P: ProviderCallbacks>(self, provider: &P) -> Result<Outcome, P::Error> {
        let Invocation {
            title,
            credential,
            script,
            method,
            timeout_ms,
            redactor,
        } = self;
        let started = Instant::now();
        let output = provider.execute_script(script, timeout_ms);
        let elapsed = started.elapsed();
        debug_lazy(provider, || {
            format!(
                "Invoke-DscResource {} took {:.3} s",
                method.as_str(),
                elapsed.as_secs_f64()
            )
        })?;
        let output = match output {
            Ok(output) => output,
            Err(e) => {
                let message = redactor.scrub(&provider.describe_error(&e));
                provider.err(
                    title,
                    &format!("Invoke-DscResource {} failed: {message}", method.as_str()),
                )?;
                return Ok(Outcome::Failed);
            }
        };
        let stdout = output.stdout.as_deref().map(str::trim).unwrap_or_default();
        if stdout.is_empty() {
            let mut message = format!(
                "Nothing returned by Invoke-DscResource {}.",
                method.as_str()
            );
            if let Some(report) = output
                .errormessage
                .as_deref()
                .filter(|m| is_timeout_report(m))
            {
                message.push_str(&format!(
                    " The PowerShell host reported a timeout: {}",
                    redactor.scrub(report)
                ));
            } else if let Some(report) = output
                .errormessage
                .as_deref()
                .filter(|m| !m.trim().is_empty())
            {
                message.push_str(&format!(" {}", redactor.scrub(report)));
            }
            provider.err(title, &message)?;
            return Ok(Outcome::Failed);
        }
        let data = match parse_json(stdout) {
            Ok(data) => data,
            Err(e) => {
                provider.err(
                    title,
                    &format!(
                    "Invoke-DscResource {} returned invalid JSON ({e}); the output starts with: {}",
                    method.as_str(),
                    redactor.scrub(&excerpt(stdout))
                ),
                )?;
                return Ok(Outcome::Failed);
            }
        };
        // What the system reports for a Sensitive-typed attribute is as
        // secret as what the manifest says: marked before it is shown, and
        // scrubbed from the error messages that follow.
        let marked = mark_value(provider.typedef()?.as_ref(), &data);
        let mut redactor = redactor.clone();
        redactor.add_value(&marked);
        let redactor = &redactor;
        debug_lazy(provider, || {
            format!("raw data received: {}", redactor.scrub(&marked.to_string()))
        })?;
        let error = data
            .as_map()
            .and_then(|m| m.get_named("errormessage"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if error.trim().is_empty() {
            return Ok(Outcome::Data(data));
        }
        if error.contains(COLLISION_MESSAGE) {
            return Ok(Outcome::Collision);
        }
        if error.to_lowercase().contains("logon failure") {
            if let Some((user, password)) = credential.and_then(credential_pair) {
                provider.err(
                title,
                &redactor.scrub(&format!("PSDscRunAsCredential account specified ({user}) does not have appropriate logon rights; are they an administrator? Later calls with this account are skipped in this run.")),
            )?;
                provider.remember_logon_failure((user, password));
                return Ok(Outcome::Failed);
            }
        }
        provider.err(title, &redactor.scrub(error))?;
        Ok(Outcome::Failed)
    }

    fn retry_after_collision<P: ProviderCallbacks>(
        self,
        provider: &P,
    ) -> Result<Option<Value>, P::Error> {
        let Invocation { title, method, .. } = self;
        provider.notice(
        title,
        "Invoke-DscResource collision detected: Please stagger the timing of your Puppet runs as this can lead to unexpected behaviour.",
    )?;
        let wait = provider.with_state(|s| s.collision_wait_seconds);
        for attempt in 1..=COLLISION_MAX_RETRIES {
            provider.notice(title, &format!("Sleeping for {wait} seconds."))?;
            provider.sleep(wait)?;
            provider.notice(
                title,
                &format!("Retrying: attempt {attempt} of {COLLISION_MAX_RETRIES}."),
            )?;
            match self.run_once(provider)? {
                Outcome::Data(data) => return Ok(Some(data)),
                Outcome::Failed => return Ok(None),
                Outcome::Collision => {
                    provider.notice(
                        title,
                        &format!("Attempt {attempt} of {COLLISION_MAX_RETRIES} failed."),
                    )?;
                }
            }
        }
        provider.err(
        title,
        &format!("Invoke-DscResource {} still collided after {COLLISION_MAX_RETRIES} retries: {COLLISION_MESSAGE}", method.as_str()),
    )?;
        Ok(None)
    }
}

#[cfg(test)]
mod secret_tests;
#[cfg(test)]
mod tests;
