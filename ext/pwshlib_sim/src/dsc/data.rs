//! A DSC call as data (docs/protocol.md, "DSC calls as data"): the core's
//! own [`DscCallData`], read from the request's `dsc` and played as the
//! [`Invocation`] the host would make of it, with the values PowerShell
//! would hold: embedded instances as CIM instances (or, for a class-based
//! resource on PowerShell 7, as what PowerShell converts to the class),
//! credentials from the request's `secrets`. The script reader
//! (`reading.rs`) is left for text a non-pwshlib manager sends.

use pwshlib_core::call_data::{CallValue, DscCallData, Instance};
use pwshlib_core::script::Route;
use pwshlib_transport::protocol::{BoundSecret, SecretValue};
use serde_json::Value as Json;

use super::reading::bound_value;
use super::{Edition, Invocation};
use crate::psvalue::{cast, cim_property_refusal, eq_ignore_case, PsValue};

/// The invocation a request's `dsc` stands for, with `bound` (its
/// `secrets`) set, on `edition`. `Err`: the message the host would fail
/// the call with.
pub fn invocation_of(
    data: &Json,
    edition: Edition,
    bound: &[BoundSecret],
) -> Result<Invocation, String> {
    let call = DscCallData::from_json(data)
        .map_err(|e| format!("protocol error: the request's dsc is not a DSC call ({e})"))?;
    let reader = Reader {
        bound,
        edition,
        class_based: call.class_based,
    };
    let properties = call
        .properties
        .iter()
        .map(|(name, value)| Ok((name.clone(), reader.value(value)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let module_name = PsValue::Str(call.module.path.unwrap_or(call.module.name));
    let module = match call.module.version {
        Some(version) => PsValue::Hash(vec![
            ("ModuleName".into(), module_name),
            ("RequiredVersion".into(), PsValue::Str(version)),
        ]),
        None => module_name,
    };
    Ok(Invocation {
        resource: call.name,
        method: call.method,
        properties,
        module,
        through_invoke_dsc_resource: call.route == Route::Through,
        lcm_unless_system: call.route == Route::LcmUnlessSystem,
        vendored_path: call.vendored_path,
    })
}

struct Reader<'b> {
    bound: &'b [BoundSecret],
    edition: Edition,
    class_based: bool,
}

impl Reader<'_> {
    /// A class-based resource on PowerShell 7: its embedded instances are
    /// hashtables PowerShell converts to the class, a credential in one a
    /// PSCredential.
    fn as_class(&self) -> bool {
        self.class_based && self.edition == Edition::Core
    }

    fn variable(&self, name: &str) -> Result<&SecretValue, String> {
        self.bound
            .iter()
            .find(|secret| eq_ignore_case(&secret.name, name))
            .map(|secret| &secret.value)
            .ok_or_else(|| format!("protocol error: the request's dsc names the variable {name}, which its secrets do not bind"))
    }

    fn value(&self, value: &CallValue) -> Result<PsValue, String> {
        Ok(match value {
            CallValue::Null => PsValue::Null,
            CallValue::Bool(flag) => PsValue::Bool(*flag),
            CallValue::Int(whole) => PsValue::Int(*whole),
            CallValue::BigInt(text) | CallValue::Real(text) => PsValue::Float(
                text.parse::<f64>()
                    .map_err(|_| format!("protocol error: {text} is no number"))?,
            ),
            CallValue::Text(text) => PsValue::Str(text.clone()),
            CallValue::Array(items) => PsValue::Array(self.values(items)?),
            CallValue::Hash(members) => PsValue::Hash(self.members(members)?),
            CallValue::Table(pairs) => PsValue::Hash(
                pairs
                    .iter()
                    .map(|(key, value)| Ok((key_text(&self.value(key)?)?, self.value(value)?)))
                    .collect::<Result<_, String>>()?,
            ),
            CallValue::DateTime(inner) => cast("DateTime", self.value(inner)?)?,
            CallValue::Typed { element, items } => {
                cast(&format!("{element}[]"), PsValue::Array(self.values(items)?))?
            }
            CallValue::Var(name) => bound_value(self.variable(name)?),
            CallValue::Instance(instance) => self.instance(instance)?,
            CallValue::Instances(items) => {
                let items = self.values(items)?;
                if self.as_class() {
                    PsValue::Array(items)
                } else {
                    PsValue::TypedArray {
                        element: "ciminstance".into(),
                        items,
                    }
                }
            }
            CallValue::CredentialInstance(name) => {
                let SecretValue::Credential { user, password } = self.variable(name)? else {
                    return Err(format!(
                        "protocol error: the variable {name} holds no credential"
                    ));
                };
                if self.as_class() {
                    PsValue::Credential {
                        user: user.clone(),
                        password: password.clone(),
                    }
                } else {
                    PsValue::Cim {
                        class: "MSFT_Credential".into(),
                        properties: vec![
                            ("UserName".into(), PsValue::Str(user.clone())),
                            ("Password".into(), PsValue::Str(password.clone())),
                        ],
                    }
                }
            }
        })
    }

    fn values(&self, items: &[CallValue]) -> Result<Vec<PsValue>, String> {
        items.iter().map(|item| self.value(item)).collect()
    }

    fn members(&self, members: &[(String, CallValue)]) -> Result<Vec<(String, PsValue)>, String> {
        members
            .iter()
            .map(|(name, value)| Ok((name.clone(), self.value(value)?)))
            .collect()
    }

    /// An embedded instance as the host makes it: a CIM instance, whose
    /// properties New-CimInstance's rules type (the host's compiled code
    /// follows them: `CimProperty.Create`), or for a class on PowerShell 7
    /// the instance PowerShell converts the hashtable to.
    fn instance(&self, instance: &Instance) -> Result<PsValue, String> {
        let properties = self.members(&instance.properties)?;
        if !self.as_class() {
            for (property, value) in &properties {
                if let Some(what) = cim_property_refusal(value) {
                    return Err(format!(
                        "Cannot infer CimType from the .NET object type of property '{property}' of {} ({what})",
                        instance.class
                    ));
                }
            }
        }
        Ok(PsValue::Cim {
            class: instance.class.clone(),
            properties,
        })
    }
}

/// A hashtable key as the simulator keeps it: its text.
fn key_text(key: &PsValue) -> Result<String, String> {
    match key {
        PsValue::Str(text) => Ok(text.clone()),
        PsValue::Int(whole) => Ok(whole.to_string()),
        PsValue::Float(real) => Ok(real.to_string()),
        PsValue::Bool(flag) => Ok(if *flag { "True" } else { "False" }.to_owned()),
        _ => Err("pwshlib-sim: a hashtable key must be a scalar".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(properties: &Json, class_based: bool) -> Json {
        json!({"name": "Thing", "method": "Set", "module": {"name": "ThingDsc"},
               "class_based": class_based, "route": "lcm_unless_system", "properties": properties})
    }

    fn credential() -> Vec<BoundSecret> {
        vec![BoundSecret {
            name: "cred_1".into(),
            value: SecretValue::Credential {
                user: "svc".into(),
                password: "pw".into(),
            },
        }]
    }

    #[test]
    fn embedded_instances_are_cim_instances_but_for_a_class_on_powershell_7() {
        let properties = json!({"sites": {"instances": [{"instance": {"class": "MSFT_Site",
            "properties": {"port": 80, "runas": {"msft_credential": "cred_1"}}}}]}});
        let desktop =
            invocation_of(&call(&properties, true), Edition::Desktop, &credential()).unwrap();
        assert!(desktop.lcm_unless_system);
        let PsValue::TypedArray { element, items } = &desktop.properties[0].1 else {
            panic!("{desktop:?}")
        };
        assert_eq!(element, "ciminstance");
        assert_eq!(
            items[0],
            PsValue::Cim {
                class: "MSFT_Site".into(),
                properties: vec![
                    ("port".into(), PsValue::Int(80)),
                    (
                        "runas".into(),
                        PsValue::Cim {
                            class: "MSFT_Credential".into(),
                            properties: vec![
                                ("UserName".into(), PsValue::Str("svc".into())),
                                ("Password".into(), PsValue::Str("pw".into())),
                            ],
                        }
                    ),
                ],
            }
        );
        let core = invocation_of(&call(&properties, true), Edition::Core, &credential()).unwrap();
        let PsValue::Array(items) = &core.properties[0].1 else {
            panic!("{core:?}")
        };
        assert!(matches!(&items[0], PsValue::Cim { properties, .. }
            if matches!(properties[1].1, PsValue::Credential { .. })));
    }

    #[test]
    fn what_new_cim_instance_cannot_type_is_refused_and_unbound_names_too() {
        let untyped =
            json!({"site": {"instance": {"class": "MSFT_Site", "properties": {"tags": []}}}});
        let error = invocation_of(&call(&untyped, false), Edition::Core, &[]).unwrap_err();
        assert!(error.contains("Cannot infer CimType"), "{error}");
        let unbound = json!({"login": {"var": "cred_9"}});
        let error = invocation_of(&call(&unbound, false), Edition::Core, &[]).unwrap_err();
        assert!(error.contains("do not bind"), "{error}");
        let typed = json!({"tags": {"typed": {"type": "string", "items": []}}});
        let read = invocation_of(&call(&typed, false), Edition::Core, &[]).unwrap();
        assert_eq!(
            read.properties[0].1,
            PsValue::TypedArray {
                element: "string".into(),
                items: vec![]
            }
        );
    }

    #[test]
    fn a_credential_array_arrives_as_credentials() {
        let logins = json!({"logins": {"typed": {"type": "PSCredential",
            "items": [{"var": "cred_1"}, {"var": "cred_1"}]}}});
        let read = invocation_of(&call(&logins, false), Edition::Core, &credential()).unwrap();
        let PsValue::TypedArray { element, items } = &read.properties[0].1 else {
            panic!("{read:?}")
        };
        assert_eq!(element, "pscredential");
        assert_eq!(items.len(), 2);
        assert!(items
            .iter()
            .all(|item| matches!(item, PsValue::Credential { .. })));
    }
}
