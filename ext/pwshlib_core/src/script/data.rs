//! A DSC call as data (issue 39; docs/protocol.md, "DSC calls as data"):
//! the request's `dsc` object, which a host that offers it turns into the
//! call with one constant script (no per-call script text for PowerShell to
//! parse and compile).
//!
//! It is read back from the body [`super::ScriptParts::into_script`] wrote,
//! whose `$InvokeParams` line follows the small grammar the simulator reads
//! too (docs/behavior.md, "The generated invocation script"): one
//! writer, so the two forms cannot say different things. A body this does
//! not cover (embedded CIM instances, made by commands before the call; a
//! hashtable key that is not a string) gives `None`, and the call goes as
//! script text, as before.
//!
//! Each value is JSON as the same literal would make it in PowerShell: a
//! string, `true`/`false`, `null`, an integer that fits 64 bits (the host
//! types it Int32 when it fits, as the parser does), an array (`object[]`),
//! or an object with one member that says what it is: `{"hash":{…}}` (a
//! Hashtable, keys without case), `{"int":"…"}` (an integer beyond 64 bits),
//! `{"real":"…"}` (a Double), `{"datetime":…}` (the `[DateTime]` cast of a
//! string or a variable), `{"empty":"uint32"}` (`[uint32[]]@()`) and
//! `{"var":"cred_…"}` (a variable the request's `secrets` bind).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{HEADER, INVOKE_CALL, THROUGH_INVOKE_DSC_RESOURCE, VENDORED_PATH_PARAMETER};
use crate::literal::{is_bare_key, is_single_quote, quote, read_single_quoted};

const INVOKE_PARAMS: &str = "$InvokeParams = ";

/// The `dsc` object of a DSC call's body, or `None` when the body says
/// more than the data form carries.
pub fn dsc_data(body: &str) -> Option<Value> {
    let rest = body.strip_prefix(HEADER)?;
    let (params, call) = rest.strip_prefix(INVOKE_PARAMS)?.split_once('\n')?;
    let mut reader = Reader { text: params };
    let Value::Object(mut table) = reader.value()? else {
        return None;
    };
    if !reader.text.is_empty() {
        return None;
    }
    let mut table = match table.remove("hash")? {
        Value::Object(table) => table,
        _ => return None,
    };
    let mut data = Map::new();
    for (from, to) in [("Name", "name"), ("Method", "method")] {
        let value = table.remove(from)?;
        value.is_string().then_some(())?;
        data.insert(to.into(), value);
    }
    data.insert("module".into(), table.remove("ModuleName")?);
    match table.remove("Property")? {
        Value::Object(mut property) => data.insert("properties".into(), property.remove("hash")?),
        _ => return None,
    };
    if !table.is_empty() {
        return None;
    }
    let mut call = call.strip_prefix(INVOKE_CALL)?.strip_suffix('\n')?;
    if let Some(rest) = call.strip_prefix(THROUGH_INVOKE_DSC_RESOURCE) {
        data.insert("through_invoke_dsc_resource".into(), Value::Bool(true));
        call = rest;
    }
    if let Some(rest) = call.strip_prefix(VENDORED_PATH_PARAMETER) {
        let (path, used) = read_single_quoted(rest)?;
        call = &rest[used..];
        data.insert("vendored_path".into(), Value::String(path));
    }
    call.is_empty().then_some(Value::Object(data))
}

/// The body a `dsc` object stands for: [`dsc_data`] backwards (the
/// simulator plays a data request through its reading of the script).
/// `None` when the object is not one [`dsc_data`] makes.
pub fn body_of(data: &Value) -> Option<String> {
    let mut out = String::from(HEADER);
    out.push_str(INVOKE_PARAMS);
    out.push_str("@{Name = ");
    out.push_str(&quote(data.get("name")?.as_str()?).ok()?);
    out.push_str("; Method = ");
    out.push_str(&quote(data.get("method")?.as_str()?).ok()?);
    out.push_str("; Property = ");
    render_hash(&mut out, data.get("properties")?.as_object()?)?;
    out.push_str("; ModuleName = ");
    render(&mut out, data.get("module")?)?;
    out.push_str("}\n");
    out.push_str(INVOKE_CALL);
    if data.get("through_invoke_dsc_resource") == Some(&Value::Bool(true)) {
        out.push_str(THROUGH_INVOKE_DSC_RESOURCE);
    }
    if let Some(path) = data.get("vendored_path") {
        out.push_str(VENDORED_PATH_PARAMETER);
        out.push_str(&quote(path.as_str()?).ok()?);
    }
    out.push('\n');
    Some(out)
}

fn render(out: &mut String, value: &Value) -> Option<()> {
    match value {
        Value::Null => out.push_str("$null"),
        Value::Bool(true) => out.push_str("$true"),
        Value::Bool(false) => out.push_str("$false"),
        Value::Number(number) => out.push_str(&number.as_i64()?.to_string()),
        Value::String(text) => out.push_str(&quote(text).ok()?),
        Value::Array(items) => {
            out.push_str("@(");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                render(out, item)?;
            }
            out.push(')');
        }
        Value::Object(object) => {
            let (tag, inner) = object.iter().next().filter(|_| object.len() == 1)?;
            match (tag.as_str(), inner) {
                ("hash", Value::Object(table)) => render_hash(out, table)?,
                ("int" | "real", Value::String(text)) => out.push_str(text),
                ("datetime", inner) => {
                    out.push_str("[DateTime]");
                    render(out, inner)?;
                }
                ("empty", Value::String(element)) if is_type_name(element) => {
                    out.push('[');
                    out.push_str(element);
                    out.push_str("[]]@()");
                }
                ("var", Value::String(name)) => {
                    out.push('$');
                    out.push_str(name);
                }
                _ => return None,
            }
        }
    }
    Some(())
}

fn render_hash(out: &mut String, table: &Map<String, Value>) -> Option<()> {
    out.push_str("@{");
    for (i, (key, value)) in table.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        if is_bare_key(key) {
            out.push_str(key);
        } else {
            out.push_str(&quote(key).ok()?);
        }
        out.push_str(" = ");
        render(out, value)?;
    }
    out.push('}');
    Some(())
}

/// Reads one value of the grammar at a time from the front of `text`.
struct Reader<'t> {
    text: &'t str,
}

impl Reader<'_> {
    fn eat(&mut self, token: &str) -> bool {
        match self.text.strip_prefix(token) {
            Some(rest) => {
                self.text = rest;
                true
            }
            None => false,
        }
    }

    fn value(&mut self) -> Option<Value> {
        if self.eat("$null") {
            return Some(Value::Null);
        }
        if self.eat("$true") {
            return Some(Value::Bool(true));
        }
        if self.eat("$false") {
            return Some(Value::Bool(false));
        }
        if self.eat("@()") {
            return Some(Value::Array(Vec::new()));
        }
        if self.eat("@(") {
            return self.array();
        }
        if self.eat("@{") {
            return self.hash();
        }
        if self.eat("[DateTime]") {
            return Some(tagged("datetime", self.value()?));
        }
        if self.eat("[") {
            let (element, rest) = self.text.split_once("[]]@()")?;
            is_type_name(element).then_some(())?;
            self.text = rest;
            return Some(tagged("empty", Value::String(element.into())));
        }
        if self.eat("$") {
            let name = self.name();
            return Some(tagged("var", Value::String(name.into())));
        }
        match self.text.chars().next()? {
            c if is_single_quote(c) => self.string(),
            c if c == '-' || c.is_ascii_digit() => self.number(),
            _ => None,
        }
    }

    fn string(&mut self) -> Option<Value> {
        let (text, used) = read_single_quoted(self.text)?;
        self.text = &self.text[used..];
        Some(Value::String(text))
    }

    /// A variable's or a bare key's name.
    fn name(&mut self) -> &str {
        let end = self
            .text
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(self.text.len());
        let (name, rest) = self.text.split_at(end);
        self.text = rest;
        name
    }

    fn number(&mut self) -> Option<Value> {
        let end = self
            .text
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
            .unwrap_or(self.text.len());
        let (literal, rest) = self.text.split_at(end);
        self.text = rest;
        let digits = literal.strip_prefix('-').unwrap_or(literal);
        if digits.is_empty() {
            return None;
        }
        if digits.bytes().all(|b| b.is_ascii_digit()) {
            return Some(match literal.parse::<i64>() {
                Ok(whole) => Value::from(whole),
                Err(_) => tagged("int", Value::String(literal.into())),
            });
        }
        literal.parse::<f64>().ok()?;
        Some(tagged("real", Value::String(literal.into())))
    }

    fn array(&mut self) -> Option<Value> {
        let mut items = vec![self.value()?];
        while self.eat(", ") {
            items.push(self.value()?);
        }
        self.eat(")").then_some(Value::Array(items))
    }

    fn hash(&mut self) -> Option<Value> {
        let mut table = Map::new();
        let mut folded_keys = HashSet::new();
        if !self.eat("}") {
            loop {
                let key = match self.text.chars().next()? {
                    c if is_single_quote(c) => match self.string()? {
                        Value::String(key) => key,
                        _ => return None,
                    },
                    c if c.is_ascii_alphabetic() || c == '_' => self.name().to_owned(),
                    // A number or a secret as a key: no JSON member name.
                    _ => return None,
                };
                self.eat(" = ").then_some(())?;
                let value = self.value()?;
                // PowerShell refuses a key given twice in any case; each
                // key's folded form is kept once, so n keys cost n look-ups.
                if !folded_keys.insert(key.to_lowercase()) {
                    return None;
                }
                table.insert(key, value);
                if self.eat("}") {
                    break;
                }
                self.eat("; ").then_some(())?;
            }
        }
        Some(tagged("hash", Value::Object(table)))
    }
}

fn tagged(tag: &str, value: Value) -> Value {
    let mut object = Map::new();
    object.insert(tag.into(), value);
    Value::Object(object)
}

fn is_type_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(params: &str, call_tail: &str) -> String {
        format!("{HEADER}{INVOKE_PARAMS}{params}\n{INVOKE_CALL}{call_tail}\n")
    }

    #[test]
    fn a_call_becomes_its_name_method_module_and_typed_properties() {
        let text = body(
            "@{Name = 'RealSetting'; Method = 'Get'; Property = @{name = 'it''s'; count = 5; big = 123456789012345678901234567890; ratio = 1.5; tags = [string[]]@(); when = [DateTime]'2024-01-02'; login = $cred_1; on = $true; off = $false; gone = $null; list = @('a', 2); empty = @(); 'odd key' = @{Inner = 1}}; ModuleName = @{ModuleName = 'PwshlibRealDsc'; RequiredVersion = '1.0.0'}}",
            " -ThroughInvokeDscResource -VendoredPath '/v/o''k'",
        );
        let data = dsc_data(&text).unwrap();
        assert_eq!(body_of(&data).as_deref(), Some(text.as_str()));
        assert_eq!(
            data,
            json!({
                "name": "RealSetting",
                "method": "Get",
                "module": {"hash": {"ModuleName": "PwshlibRealDsc", "RequiredVersion": "1.0.0"}},
                "properties": {
                    "name": "it's", "count": 5, "big": {"int": "123456789012345678901234567890"},
                    "ratio": {"real": "1.5"}, "tags": {"empty": "string"},
                    "when": {"datetime": "2024-01-02"}, "login": {"var": "cred_1"},
                    "on": true, "off": false, "gone": null, "list": ["a", 2], "empty": [],
                    "odd key": {"hash": {"Inner": 1}}
                },
                "through_invoke_dsc_resource": true,
                "vendored_path": "/v/o'k"
            })
        );
    }

    #[test]
    fn a_plain_module_name_and_no_options() {
        let text = body(
            "@{Name = 'File'; Method = 'Set'; Property = @{}; ModuleName = 'PSDscResources'}",
            "",
        );
        let data = dsc_data(&text).unwrap();
        assert_eq!(data["module"], json!("PSDscResources"));
        assert_eq!(data["properties"], json!({}));
        assert!(data.get("vendored_path").is_none());
    }

    #[test]
    fn what_the_data_form_does_not_carry_stays_script() {
        let cim = format!(
            "{HEADER}$cim_1 = New-CimInstance -ClientOnly -ClassName 'X' -Property @{{}}\n{INVOKE_PARAMS}@{{Name = 'A'; Method = 'Get'; Property = @{{x = $cim_1}}; ModuleName = 'M'}}\n{INVOKE_CALL}\n"
        );
        assert_eq!(dsc_data(&cim), None);
        let numeric_key = body(
            "@{Name = 'A'; Method = 'Get'; Property = @{x = @{1 = 'a'}}; ModuleName = 'M'}",
            "",
        );
        assert_eq!(dsc_data(&numeric_key), None);
        let trailing = body(
            "@{Name = 'A'; Method = 'Get'; Property = @{}; ModuleName = 'M'}",
            " -Other",
        );
        assert_eq!(dsc_data(&trailing), None);
        // A key given twice in any case: PowerShell refuses the literal,
        // so the text (which it would refuse) is not turned into data.
        let twice = body(
            "@{Name = 'A'; Method = 'Get'; Property = @{x = @{Key = 1; b = 2; KEY = 3}}; ModuleName = 'M'}",
            "",
        );
        assert_eq!(dsc_data(&twice), None);
        let many: Vec<String> = (0..2_000).map(|i| format!("k{i} = {i}")).collect();
        let distinct = body(
            &format!(
                "@{{Name = 'A'; Method = 'Get'; Property = @{{x = @{{{}}}}}; ModuleName = 'M'}}",
                many.join("; ")
            ),
            "",
        );
        let data = dsc_data(&distinct).unwrap();
        assert_eq!(
            data["properties"]["x"]["hash"].as_object().map(Map::len),
            Some(2_000)
        );
    }
}
