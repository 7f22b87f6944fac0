//! A call's `--debug` line: what is sent, readable and redacted. Every
//! secret in the value is a variable bound beside it, so each shows as
//! Puppet's own rendering of a Sensitive value, whatever it holds.

use std::fmt::Write as _;

use super::{CallValue, DscCallData};
use crate::secrecy::REDACTED_SENSITIVE;

impl DscCallData {
    /// `Get RealSetting from PwshlibRealDsc 1.0.0, direct, vendored path
    /// '…': {name => 'x', login => #<Sensitive [value redacted]>}`.
    pub fn summary(&self) -> String {
        let mut out = String::with_capacity(128);
        let _ = write!(
            out,
            "{} {} from {}",
            self.method.as_str(),
            self.name,
            self.module.name
        );
        if let Some(version) = &self.module.version {
            let _ = write!(out, " {version}");
        }
        let _ = write!(out, ", {}", self.route.wire_name());
        if self.class_based {
            out.push_str(", class-based");
        }
        if let Some(path) = &self.vendored_path {
            let _ = write!(out, ", vendored path '{path}'");
        }
        out.push_str(": ");
        members(&mut out, &self.properties);
        out
    }
}

fn members(out: &mut String, members: &[(String, CallValue)]) {
    out.push('{');
    for (i, (name, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(name);
        out.push_str(" => ");
        shown(out, value);
    }
    out.push('}');
}

fn list(out: &mut String, items: &[CallValue]) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        shown(out, item);
    }
    out.push(']');
}

fn shown(out: &mut String, value: &CallValue) {
    match value {
        CallValue::Null => out.push_str("undef"),
        CallValue::Bool(flag) => {
            let _ = write!(out, "{flag}");
        }
        CallValue::Int(whole) => {
            let _ = write!(out, "{whole}");
        }
        CallValue::BigInt(text) | CallValue::Real(text) => out.push_str(text),
        CallValue::Text(text) => {
            out.push('\'');
            out.push_str(text);
            out.push('\'');
        }
        CallValue::Array(items) | CallValue::Instances(items) => list(out, items),
        CallValue::Hash(entries) => members(out, entries),
        CallValue::Table(pairs) => {
            out.push('{');
            for (i, (key, value)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                shown(out, key);
                out.push_str(" => ");
                shown(out, value);
            }
            out.push('}');
        }
        CallValue::DateTime(inner) => {
            out.push_str("DateTime ");
            shown(out, inner);
        }
        CallValue::Typed { element, items } => {
            let _ = write!(out, "{element}");
            list(out, items);
        }
        CallValue::Var(_) | CallValue::CredentialInstance(_) => out.push_str(REDACTED_SENSITIVE),
        CallValue::Instance(instance) => {
            out.push_str(&instance.class);
            out.push(' ');
            members(out, &instance.properties);
        }
    }
}
