//! Export against the state file: every stored instance of the resource,
//! each as its Get reports it, as a class's static `Export()` or a script
//! module's `Export-TargetResource` lists what the machine has.

use serde_json::{json, Value as Json};

use super::methods::shown_as_get;
use crate::state::State;

/// `{"instances": [...]}`, or for a type listed in `no_export` the
/// host's answer for a resource that cannot list itself: no instances and
/// why (`cannot_export`), which is not an error of the call.
pub(super) fn export(state: &State, resource: &str, class_based: bool) -> Json {
    if state.cannot_export(resource) {
        let why = if class_based {
            format!("its class '{resource}' defines no static Export() method")
        } else {
            "its module defines no Export-TargetResource function".to_owned()
        };
        return json!({"instances": null, "cannot_export": why, "errormessage": ""});
    }
    let has_ensure = state.has_ensure(resource);
    let instances: Vec<Json> = state
        .instances(resource)
        .map(|items| {
            items
                .iter()
                .filter_map(Json::as_object)
                .map(|stored| {
                    Json::Object(shown_as_get(stored.iter(), has_ensure, true, "Present"))
                })
                .collect()
        })
        .unwrap_or_default();
    json!({"instances": instances, "errormessage": ""})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_with(doc: &Json) -> (State, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "pwshlib-sim-export-{}-{}",
            std::process::id(),
            doc.to_string().len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.json");
        std::fs::write(&path, doc.to_string()).unwrap();
        (State::open(Some(&path)).unwrap(), dir)
    }

    #[test]
    fn lists_every_stored_instance_as_its_get_reports_it() {
        let (state, dir) = state_with(&json!({"resources": {"FixtureUser": [
            {"UserName": "alice", "FullName": "", "Password": {"user": "alice", "password": "pw"}},
            {"UserName": "bob", "Ensure": "Absent"},
        ]}}));
        let listed = export(&state, "fixtureuser", false);
        drop(state);
        std::fs::remove_dir_all(dir).unwrap();
        assert_eq!(
            listed,
            json!({"instances": [
                {"UserName": "alice", "FullName": null, "Ensure": "Present",
                 "Password": {"UserName": "alice", "Password": "pw", "cim_instance_type": "MSFT_Credential"}},
                {"UserName": "bob", "Ensure": "Absent"},
            ], "errormessage": ""})
        );
    }

    #[test]
    fn a_type_in_no_export_says_why_by_its_kind() {
        let (state, dir) = state_with(&json!({"no_export": ["RealPool", "FixtureFile"]}));
        let class = export(&state, "RealPool", true);
        let script = export(&state, "FixtureFile", false);
        let listed = export(&state, "FixtureUser", false);
        drop(state);
        std::fs::remove_dir_all(dir).unwrap();
        assert_eq!(class["instances"], Json::Null);
        assert_eq!(
            class["cannot_export"],
            json!("its class 'RealPool' defines no static Export() method")
        );
        assert_eq!(
            script["cannot_export"],
            json!("its module defines no Export-TargetResource function")
        );
        assert_eq!(listed, json!({"instances": [], "errormessage": ""}));
    }
}
