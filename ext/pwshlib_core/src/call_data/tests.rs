use serde_json::json;

use super::*;
use crate::bound::BoundValue;
use crate::cim_type::MofType;
use crate::script::{build_script_with, call_data, InvocableResource, InvokeParameter};
use crate::value::{Map, Value};

fn s(text: &str) -> Value {
    Value::str(text)
}

fn secret(value: Value) -> Value {
    Value::Sensitive(Box::new(value))
}

fn hash(pairs: Vec<(&str, Value)>) -> Value {
    Value::Hash(pairs.into_iter().map(|(k, v)| (s(k), v)).collect())
}

fn parameter(name: &str, value: Value, mof: Option<&str>, shape: &str) -> InvokeParameter {
    let embedded = mof.is_some_and(|m| m.starts_with("MSFT_") || m.contains("Credential"));
    InvokeParameter {
        attribute: format!("dsc_{name}"),
        value,
        mof_type: mof.map(|m| MofType::parse(m, embedded)),
        mof_is_embedded: embedded,
        shape: TypeShape::parse(shape),
    }
}

fn resource(implementation: &str, parameters: Vec<InvokeParameter>) -> InvocableResource {
    InvocableResource {
        name: Some("dsc_thing".into()),
        friendly_name: "Thing".into(),
        resource_name: "Thing".into(),
        implementation: Some(implementation.into()),
        module_name: "ThingDsc".into(),
        module_version: Some("1.2.3".into()),
        method: DscMethod::Set,
        vendored_modules_path: "/v".into(),
        parameters,
    }
}

fn counter() -> impl FnMut(&str) -> String {
    let mut n = 0;
    move |prefix: &str| {
        n += 1;
        format!("{prefix}{n}")
    }
}

fn built(resource: &InvocableResource) -> DscCallData {
    call_data(resource, Route::Direct, &mut counter()).unwrap()
}

use crate::typedef::TypeShape;

#[test]
fn scalars_keep_their_types_and_secrets_are_bound_beside_the_value() {
    let call = built(&resource(
        "MOF",
        vec![
            parameter("name", s("it's"), Some("String"), "String"),
            parameter("count", Value::Int(5), Some("UInt32"), "Integer"),
            parameter(
                "big",
                Value::BigInt("123456789012345678901234567890".into()),
                None,
                "Any",
            ),
            parameter("ratio", Value::Float(1.5), Some("Real64"), "Float"),
            parameter(
                "tags",
                Value::Array(vec![]),
                Some("String[]"),
                "Array[String]",
            ),
            parameter("when", s("2024-01-02"), Some("DateTime"), "String"),
            parameter("on", Value::Bool(true), Some("Boolean"), "Boolean"),
            parameter(
                "token",
                secret(s("hunter2")),
                Some("String"),
                "Sensitive[String]",
            ),
            parameter(
                "login",
                hash(vec![("user", s("svc")), ("password", secret(s("pw")))]),
                Some("PSCredential"),
                "Struct[{user => String, password => Sensitive[String]}]",
            ),
            parameter("odd", hash(vec![("odd key", Value::Int(1))]), None, "Any"),
        ],
    ));
    assert_eq!(
        call.to_json(),
        json!({
            "name": "Thing", "method": "Set",
            "module": {"version": "1.2.3", "path": "/v/ThingDsc/ThingDsc.psd1"},
            "vendored_path": "/v",
            "properties": {
                "name": "it's", "count": 5, "big": {"int": "123456789012345678901234567890"},
                "ratio": {"real": "1.5"}, "tags": {"typed": {"type": "string", "items": []}},
                "when": {"datetime": "2024-01-02"}, "on": true,
                "token": {"var": "secret_1"}, "login": {"var": "cred_2"},
                "odd": {"hash": {"odd key": 1}}
            }
        })
    );
    assert_eq!(call.secrets[0].value, BoundValue::Text("hunter2".into()));
    assert!(
        matches!(&call.secrets[1].value, BoundValue::Credential { user, password, .. } if user == "svc" && password == "pw")
    );
    assert!(!call.to_json().to_string().contains("hunter2"));
    assert_eq!(
        DscCallData::from_json(&call.to_json()).unwrap(),
        DscCallData {
            secrets: vec![],
            ..call
        }
    );
}

#[test]
fn embedded_instances_nested_and_in_arrays_carry_their_class() {
    let site = hash(vec![
        ("port", Value::Int(80)),
        ("gone", Value::Nil),
        ("names", Value::Array(vec![])),
        ("mixed", Value::Array(vec![Value::Int(1), s("a")])),
        (
            "cert",
            hash(vec![
                ("cim_instance_type", s("MSFT_Cert")),
                ("thumb", s("ab")),
            ]),
        ),
        (
            "runas",
            hash(vec![("user", s("u")), ("password", secret(s("p4ss")))]),
        ),
    ]);
    let shape = "Array[Struct[{port => Integer, gone => Optional[String], names => Array[String], mixed => Array[String], cert => Struct[{thumb => String}], runas => Struct[{user => String, password => Sensitive[String]}]}]]";
    let call = built(&resource(
        "Class",
        vec![parameter("sites", site, Some("MSFT_Site[]"), shape)],
    ));
    assert!(call.class_based);
    assert_eq!(call.module.path, None);
    assert_eq!(
        call.to_json()["properties"]["sites"],
        json!({"instances": [{"instance": {"class": "MSFT_Site", "properties": {
            "port": 80,
            "names": {"typed": {"type": "string", "items": []}},
            "mixed": {"typed": {"type": "string", "items": [1, "a"]}},
            "cert": {"instance": {"class": "MSFT_Cert", "properties": {"thumb": "ab"}}},
            "runas": {"msft_credential": "cred_1"}
        }}}]})
    );
    let read = DscCallData::from_json(&call.to_json()).unwrap();
    assert_eq!(read.properties, call.properties);
}

#[test]
fn a_sensitive_hash_is_a_table_whose_keys_are_secrets_too() {
    let call = built(&resource(
        "MOF",
        vec![parameter(
            "opts",
            secret(hash(vec![("k", s("v"))])),
            None,
            "Any",
        )],
    ));
    assert_eq!(
        call.to_json()["properties"]["opts"],
        json!({"table": [[{"var": "secret_1"}, {"var": "secret_2"}]]})
    );
    assert!(call
        .summary()
        .contains("opts => {#<Sensitive [value redacted]> => #<Sensitive [value redacted]>}"));
}

#[test]
fn the_summary_names_the_call_and_shows_no_secret() {
    let mut call = built(&resource(
        "MOF",
        vec![
            parameter("name", s("x"), Some("String"), "String"),
            parameter(
                "token",
                secret(s("hunter2")),
                Some("String"),
                "Sensitive[String]",
            ),
        ],
    ));
    call.route = Route::LcmUnlessSystem;
    assert_eq!(
        call.summary(),
        "Set Thing from ThingDsc 1.2.3, lcm_unless_system, vendored path '/v': {name => 'x', token => #<Sensitive [value redacted]>}"
    );
    assert_eq!(call.to_json()["route"], json!("lcm_unless_system"));
}

#[test]
fn the_script_carries_the_same_call_as_data() {
    let resource = resource(
        "MOF",
        vec![parameter("name", s("x"), Some("String"), "String")],
    );
    let script = build_script_with(&resource, &mut counter()).unwrap();
    let call = script.call().unwrap();
    assert_eq!(call.name, "Thing");
    assert_eq!(
        call.properties,
        vec![("name".to_owned(), CallValue::Text("x".into()))]
    );
}

#[test]
fn a_credential_array_is_typed_and_each_credential_bound() {
    let login = |user: &str| hash(vec![("user", s(user)), ("password", secret(s("pw")))]);
    let call = built(&resource(
        "MOF",
        vec![parameter(
            "logins",
            Value::Array(vec![login("one"), login("two")]),
            Some("PSCredential[]"),
            "Array[Struct[{user => String, password => Sensitive[String]}]]",
        )],
    ));
    assert_eq!(
        call.to_json()["properties"]["logins"],
        json!({"typed": {"type": "PSCredential", "items": [{"var": "cred_1"}, {"var": "cred_2"}]}})
    );
    assert!(call.secrets.iter().all(|binding| matches!(
        &binding.value,
        BoundValue::Credential { password, .. } if password == "pw"
    )));
    let text = crate::script::render(&call).invoke_params.text;
    assert!(
        text.contains("logins = [PSCredential[]]@($cred_1, $cred_2)"),
        "{text}"
    );
}

#[test]
fn what_is_not_a_call_is_refused_when_read() {
    for bad in [
        json!({"name": "A", "method": "Get", "module": {"name": "M"}, "properties": {"x": {"a": 1, "b": 2}}}),
        json!({"name": "A", "method": "Fetch", "module": {"name": "M"}, "properties": {}}),
        json!({"name": "A", "method": "Get", "module": {"name": "M"}, "properties": {}, "route": "sideways"}),
        json!({"name": "A", "method": "Get", "module": {"name": "M"}, "properties": {"x": {"typed": {"type": "a b", "items": []}}}}),
        json!({"name": "A", "method": "Get", "module": {"name": "M"}, "properties": {"x": {"what": 1}}}),
    ] {
        assert!(DscCallData::from_json(&bad).is_err(), "{bad}");
    }
    let map = Map::new();
    assert!(map.is_empty());
}

#[test]
fn export_is_a_fourth_method_of_the_same_call() {
    let wire = json!({"name": "A", "method": "Export", "module": {"name": "M"}, "properties": {}});
    let call = DscCallData::from_json(&wire).unwrap();
    assert_eq!(call.method, DscMethod::Export);
    assert_eq!(call.to_json()["method"], json!("Export"));
    assert_eq!(DscMethod::parse(" export "), Some(DscMethod::Export));
    assert_eq!(DscMethod::Export.as_lowercase_str(), "export");
    let padded =
        json!({"name": "A", "method": " Export", "module": {"name": "M"}, "properties": {}});
    assert!(DscCallData::from_json(&padded).is_err());
}
