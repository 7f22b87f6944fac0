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
