//! Comparing values the way DSC resources (and the provider) do, and
//! finding a property without case. The state file's key matching and the
//! DSC engine both use it; it uses neither (no import circle).

use serde_json::{Map as JsonMap, Value as Json};

use crate::psvalue::{eq_ignore_case, CIM_INSTANCE_TYPE};

/// Case-insensitive property lookup.
pub fn get_ci<'a>(map: &'a JsonMap<String, Json>, name: &str) -> Option<&'a Json> {
    map.get(name).or_else(|| {
        map.iter()
            .find(|(k, _)| eq_ignore_case(k, name))
            .map(|(_, v)| v)
    })
}

fn is_empty(value: &Json) -> bool {
    match value {
        Json::Null => true,
        Json::String(s) => s.is_empty(),
        Json::Array(items) => items.is_empty(),
        Json::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// Loose equality: strings without case, numbers and strings coerced,
/// arrays without order, hash keys without case, empty equals null,
/// date-times as instants. A credential's password must match exactly.
pub fn values_equal(a: &Json, b: &Json) -> bool {
    values_equal_at(a, b, 0)
}

fn values_equal_at(a: &Json, b: &Json, depth: usize) -> bool {
    if depth > 64 {
        return a == b;
    }
    if is_empty(a) && is_empty(b) {
        return true;
    }
    match (a, b) {
        (Json::String(x), Json::String(y)) => {
            eq_ignore_case(x, y)
                || match (
                    pwshlib_core::Timestamp::parse(x),
                    pwshlib_core::Timestamp::parse(y),
                ) {
                    (Some(tx), Some(ty)) => tx == ty,
                    _ => false,
                }
        }
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Number(n), Json::String(s)) | (Json::String(s), Json::Number(n)) => {
            s.trim().parse::<f64>().ok() == n.as_f64()
        }
        (Json::Bool(x), Json::Bool(y)) => x == y,
        (Json::Bool(x), Json::String(s)) | (Json::String(s), Json::Bool(x)) => s
            .trim()
            .eq_ignore_ascii_case(if *x { "true" } else { "false" }),
        (Json::Array(xs), Json::Array(ys)) => {
            if xs.len() != ys.len() {
                return false;
            }
            let mut used = vec![false; ys.len()];
            xs.iter().all(|x| {
                let hit = ys
                    .iter()
                    .enumerate()
                    .position(|(i, y)| !used[i] && values_equal_at(x, y, depth + 1));
                hit.map(|i| used[i] = true).is_some()
            })
        }
        // A single value equals a one-element array, as PowerShell unrolls.
        (Json::Array(xs), single) | (single, Json::Array(xs)) if xs.len() == 1 => {
            values_equal_at(&xs[0], single, depth + 1)
        }
        (Json::Object(x), Json::Object(y)) => objects_equal(x, y, depth),
        _ => false,
    }
}

fn objects_equal(x: &JsonMap<String, Json>, y: &JsonMap<String, Json>, depth: usize) -> bool {
    let names = x.keys().chain(y.keys());
    for name in names {
        let a = get_ci(x, name).unwrap_or(&Json::Null);
        let b = get_ci(y, name).unwrap_or(&Json::Null);
        let equal = if name.eq_ignore_ascii_case("password") {
            a == b
        } else if name.eq_ignore_ascii_case(CIM_INSTANCE_TYPE) {
            match (a.as_str(), b.as_str()) {
                (Some(p), Some(q)) => eq_ignore_case(p, q),
                _ => true,
            }
        } else {
            values_equal_at(a, b, depth + 1)
        };
        if !equal {
            return false;
        }
    }
    true
}
