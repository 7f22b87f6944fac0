//! What kind of failure a DSC call reported: a collision with another DSC
//! run (retried), a run-as logon failure (remembered for the run), or any
//! other. Read from what does not depend on Windows' display language
//! first, the error's category and codes that the prelude adds to a
//! failed outcome (`errorcategory`, `errorcodes`: docs/protocol.md,
//! "Execution semantics"), then from the English messages pwshlib 2.x
//! matched (a host without those fields, the simulator's plain faults).

use super::COLLISION_MESSAGE;
use crate::value::Value;

/// A failure's kind, as [`failure_kind`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The LCM was busy with another operation.
    Collision,
    /// The run-as credential cannot log on (and will not this run).
    LogonFailure,
    /// Anything else.
    Other,
}

/// The ErrorRecord category the 5.1 LCM gives a call it refuses because
/// another operation (a consistency check, another Invoke-DscResource) is
/// in progress: PowerShell's `ErrorCategory.ResourceBusy`, an enum name,
/// which no display language changes (CimCmdlets maps the CIM error's
/// category to it).
const BUSY_CATEGORY: &str = "ResourceBusy";

/// The Win32 errors `LogonUser` fails with when the account cannot log
/// on, however often it is tried (winerror.h): the LCM starts a run-as
/// resource through it, and each further try with a wrong password counts
/// towards the account's lockout.
const LOGON_ERRORS: [u32; 10] = [
    1326, // ERROR_LOGON_FAILURE: unknown user name or bad password
    1327, // ERROR_ACCOUNT_RESTRICTION
    1328, // ERROR_INVALID_LOGON_HOURS
    1329, // ERROR_INVALID_WORKSTATION
    1330, // ERROR_PASSWORD_EXPIRED
    1331, // ERROR_ACCOUNT_DISABLED
    1385, // ERROR_LOGON_TYPE_NOT_GRANTED
    1793, // ERROR_ACCOUNT_EXPIRED
    1907, // ERROR_PASSWORD_MUST_CHANGE
    1909, // ERROR_ACCOUNT_LOCKED_OUT
];

/// The kind of the failure `message` that the outcome `data` reported.
pub fn failure_kind(data: &Value, message: &str) -> FailureKind {
    let field = |name: &str| data.as_map().and_then(|map| map.get_named(name));
    let category = field("errorcategory").and_then(Value::as_str);
    if category == Some(BUSY_CATEGORY) || message.contains(COLLISION_MESSAGE) {
        return FailureKind::Collision;
    }
    let codes = field("errorcodes")
        .and_then(Value::as_array)
        .unwrap_or_default();
    let logon_code = codes
        .iter()
        .filter_map(win32_code)
        .any(|code| LOGON_ERRORS.contains(&code));
    if logon_code || message.to_lowercase().contains("logon failure") {
        return FailureKind::LogonFailure;
    }
    FailureKind::Other
}

/// The Win32 error a code stands for: itself (below 0x10000), or the low
/// word of an HRESULT of FACILITY_WIN32 (`0x8007xxxx`, HRESULT_FROM_WIN32),
/// given as .NET's signed `HResult` or unsigned.
fn win32_code(code: &Value) -> Option<u32> {
    let Value::Int(number) = code else {
        return None;
    };
    let code = u32::try_from(*number)
        .ok()
        .or_else(|| i32::try_from(*number).ok().map(i32::cast_unsigned))?;
    if code < 0x1_0000 {
        Some(code)
    } else if code & 0xFFFF_0000 == 0x8007_0000 {
        Some(code & 0xFFFF)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Map;

    fn outcome(category: Option<&str>, codes: &[i64]) -> Value {
        let mut map = Map::new();
        if let Some(category) = category {
            map.insert(
                Value::Str("errorcategory".to_owned()),
                Value::Str(category.to_owned()),
            );
        }
        map.insert(
            Value::Str("errorcodes".to_owned()),
            Value::Array(codes.iter().map(|&c| Value::Int(c)).collect()),
        );
        Value::Hash(map)
    }

    /// The LCM's messages as a German Windows shows them.
    const GERMAN_BUSY: &str = "Das Cmdlet \"Invoke-DscResource\" kann nicht aufgerufen werden. Die Konsistenzprüfung wird ausgeführt und muss abgeschlossen sein, bevor Invoke-DscResource aufgerufen werden kann.";
    const GERMAN_LOGON: &str = "Anmeldung fehlgeschlagen: Der Benutzer besitzt nicht den benötigten Anmeldetyp auf diesem Computer.";

    #[test]
    fn a_localized_collision_is_known_by_its_category() {
        let busy = outcome(Some("ResourceBusy"), &[1]);
        assert_eq!(failure_kind(&busy, GERMAN_BUSY), FailureKind::Collision);
        let other = outcome(Some("InvalidOperation"), &[1]);
        assert_eq!(failure_kind(&other, GERMAN_BUSY), FailureKind::Other);
    }

    #[test]
    fn a_localized_logon_failure_is_known_by_its_code() {
        // .NET's HResult of HRESULT_FROM_WIN32(1385), signed; the LCM's
        // error_Code as the Win32 error; HRESULT_FROM_WIN32(1326) unsigned.
        for code in [-2_147_023_511_i64, 1385, 0x8007_052E] {
            let failed = outcome(Some("NotSpecified"), &[code]);
            assert_eq!(
                failure_kind(&failed, GERMAN_LOGON),
                FailureKind::LogonFailure,
                "{code}"
            );
        }
        // Another facility's 0x...052E is not ERROR_LOGON_FAILURE.
        let other = outcome(None, &[0x8004_052E, 5]);
        assert_eq!(failure_kind(&other, GERMAN_LOGON), FailureKind::Other);
    }

    #[test]
    fn english_messages_without_codes_are_still_known() {
        let plain = Value::Hash(Map::new());
        let collided = format!("Cannot invoke the Invoke-DscResource cmdlet. {COLLISION_MESSAGE}.");
        assert_eq!(failure_kind(&plain, &collided), FailureKind::Collision);
        assert_eq!(
            failure_kind(&plain, "Logon failure: unknown user name or bad password."),
            FailureKind::LogonFailure
        );
        assert_eq!(
            failure_kind(&plain, "The resource threw."),
            FailureKind::Other
        );
    }

    #[test]
    fn a_localized_logon_failure_is_remembered_and_not_tried_again() {
        use crate::lifecycle::spine::invoke_get_method;
        use crate::test_support::fake_provider::{out, FakeProvider};
        let provider = FakeProvider::new();
        provider.answers.borrow_mut().push_back(out(&format!(
            r#"{{"errormessage":"{GERMAN_LOGON}","errorcategory":"NotSpecified","errorcodes":[-2147023511]}}"#
        )));
        let credential = Value::Hash(Map(vec![
            (Value::str("user"), Value::str("svc")),
            (
                Value::str("password"),
                Value::Sensitive(Box::new(Value::str("Secr3t"))),
            ),
        ]));
        let resource = |name: &str| {
            Map(vec![
                (Value::sym("name"), Value::str(name)),
                (Value::sym("dsc_destinationpath"), Value::str("c:\\foo")),
                (Value::sym("dsc_ensure"), Value::str("present")),
                (Value::sym("dsc_psdscrunascredential"), credential.clone()),
            ])
        };
        assert_eq!(
            invoke_get_method(&provider, &resource("One")).unwrap(),
            None
        );
        assert_eq!(
            invoke_get_method(&provider, &resource("Two")).unwrap(),
            None
        );
        assert_eq!(
            provider.methods().len(),
            1,
            "the second resource is not tried"
        );
        let errors = provider.logged("err");
        assert!(
            errors[0].contains("svc") && errors[0].contains("logon rights"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn a_localized_collision_is_retried() {
        use crate::lifecycle::spine::invoke_get_method;
        use crate::lifecycle::Provider;
        use crate::test_support::fake_provider::{out, FakeProvider};
        let provider = FakeProvider::new();
        provider.with_state(|s| s.collision_wait_seconds = 0.0);
        let busy = format!(
            r#"{{"errormessage":"{}","errorcategory":"ResourceBusy","errorcodes":[1]}}"#,
            GERMAN_BUSY.replace('"', "\\\"")
        );
        provider.answers.borrow_mut().push_back(out(&busy));
        let resource = Map(vec![
            (Value::sym("name"), Value::str("Title")),
            (Value::sym("dsc_destinationpath"), Value::str("c:\\foo")),
            (Value::sym("dsc_ensure"), Value::str("present")),
        ]);
        invoke_get_method(&provider, &resource).unwrap();
        assert_eq!(
            provider.methods().len(),
            2,
            "sent again after the collision"
        );
        assert!(provider.logged("notice")[0].contains("collision"));
    }
}
