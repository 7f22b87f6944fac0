//! The host wire protocol (docs/protocol.md): length-prefixed UTF-8 JSON
//! frames between `Pwsh::Manager` and the PowerShell host (or `pwshlib-sim`).
//!
//! Decoding never panics and never allocates more than the bytes that have
//! actually arrived (plus a small read buffer): a claimed length above
//! [`MAX_FRAME_LEN`] is refused before anything is read, and a payload is
//! read incrementally, so a lying length on a short stream costs nothing.

use std::fmt;
use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

/// The protocol version this codec speaks (the `hello` frame's `protocol`).
pub const PROTOCOL_VERSION: u32 = 1;
/// The prelude mechanism this codec speaks (the `hello` frame's `prelude`;
/// absent or 0 means the host has none, as hosts before it).
pub const PRELUDE_VERSION: u32 = 1;
/// The DSC data form this codec speaks (the `hello` frame's `dsc`; absent
/// or 0: the host gets every DSC call as script text).
pub const DSC_VERSION: u32 = 2;
/// The secret binding this codec speaks (the `hello` frame's `secrets`;
/// absent or 0: the host binds nothing, and gets secrets as literals).
pub const SECRETS_VERSION: u32 = 1;
/// The largest payload either side accepts: 256 MiB.
pub const MAX_FRAME_LEN: usize = 256 * 1024 * 1024;
/// `timeout_ms` when the caller gives none: 300 s.
pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;
/// Smaller timeouts are raised to this floor.
pub const MIN_TIMEOUT_MS: u64 = 50;

/// Applies the default and the floor to a caller's timeout. Zero means the
/// default too: some callers use it for "no timeout", which is not offered.
pub fn effective_timeout_ms(requested: Option<u64>) -> u64 {
    match requested {
        None | Some(0) => DEFAULT_TIMEOUT_MS,
        Some(ms) => ms.max(MIN_TIMEOUT_MS),
    }
}

/// The host's reply text for a timed-out call.
pub fn timeout_message(timeout_ms: u64) -> String {
    format!("Catastrophic failure: PowerShell module timeout ({timeout_ms} ms) exceeded while executing")
}

/// The host's reply text for a missing working directory.
pub fn missing_working_dir_message(dir: &str) -> String {
    format!("Working directory '{dir}' does not exist")
}

/// Every message of protocol version 1, in both directions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// Host → manager, once, right after the connection is accepted.
    Hello {
        protocol: u32,
        pid: u32,
        host: String,
        /// The prelude mechanism the host offers; 0 (or absent) for none.
        #[serde(default, skip_serializing_if = "is_zero")]
        prelude: u32,
        /// The secret binding the host offers (a request's `secrets`); 0
        /// (or absent) for none.
        #[serde(default, skip_serializing_if = "is_zero")]
        secrets: u32,
        /// How the host got its compiled C#: "compiled" at this start,
        /// "cached" (loaded from its assembly cache); absent from a host
        /// that does not say (an older host.ps1, the simulator).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assembly: Option<String>,
        /// The DSC data form the host offers (a request's `dsc`); 0 (or
        /// absent) for none.
        #[serde(default, skip_serializing_if = "is_zero")]
        dsc: u32,
    },
    /// Manager → host: run code.
    Execute(ExecuteRequest),
    /// Manager → host: close the connection and exit.
    Exit,
    /// Host → manager: the answer to one `execute`.
    Result(ExecuteResult),
    /// Host → manager: the host received a malformed frame and is leaving.
    Error { message: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecuteRequest {
    /// Numbers the requests on one connection (the host echoes it in the
    /// result), so that a reply is never taken for another request's.
    /// [`crate::host::Host::execute`] assigns it; 0 until then.
    #[serde(default)]
    pub id: u64,
    pub code: String,
    pub timeout_ms: u64,
    #[serde(default)]
    pub working_dir: Option<String>,
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// Run the code in the session that holds this prelude (a host that
    /// offers preludes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prelude: Option<PreludeRef>,
    /// Variables the host binds in the runspace before the code runs
    /// (docs/protocol.md, "Secrets"): a DSC call's secrets travel here,
    /// never in its code. Only to a host whose hello offered `secrets`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<BoundSecret>,
    /// A DSC call as data (docs/protocol.md, "DSC calls as data"), which
    /// the host makes with a constant script instead of `code`. Only to a
    /// host whose hello offered `dsc`, and only with a prelude; the
    /// manager drops it (keeping `code`) for any other host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsc: Option<serde_json::Value>,
    /// The variables `dsc` names, which become the request's `secrets`
    /// when `dsc` goes; `secrets` are those the code names. Never sent
    /// as such.
    #[serde(skip)]
    pub dsc_secrets: Vec<BoundSecret>,
}

/// One variable a host binds: its name (without `$`) and value.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundSecret {
    pub name: String,
    #[serde(flatten)]
    pub value: SecretValue,
}

/// A bound variable's value, by kind. The host makes a `System.String`, an
/// integer typed as PowerShell types the same literal, a `System.Double`, a
/// `System.Boolean`, or a `PSCredential` whose password is a
/// `SecureString` it builds.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SecretValue {
    String { value: String },
    Integer { value: String },
    Real { value: String },
    Bool { value: bool },
    Credential { user: String, password: String },
}

impl SecretValue {
    /// The kind's name, as the wire writes it.
    pub fn kind(&self) -> &'static str {
        match self {
            SecretValue::String { .. } => "string",
            SecretValue::Integer { .. } => "integer",
            SecretValue::Real { .. } => "real",
            SecretValue::Bool { .. } => "bool",
            SecretValue::Credential { .. } => "credential",
        }
    }
}

/// Only the kind: a value may be shown (`{:?}`) in a test's failure, its
/// secret never.
impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretValue({}, redacted)", self.kind())
    }
}

/// Only the name and the kind: a request may be shown (`{:?}`) in an
/// error or a test's failure, its secrets never.
impl std::fmt::Debug for BoundSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "BoundSecret({} {}, redacted)",
            self.name,
            self.value.kind()
        )
    }
}

/// Which prelude a request runs with, and its text when the host does not
/// hold it yet (the first such request of a host session).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreludeRef {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

impl ExecuteRequest {
    /// Builds a request from the Ruby-facing arguments: the timeout gets its
    /// default and floor, and `"NAME=value"` strings become pairs (a string
    /// without `=`, with an empty name or with an empty value is ignored, as
    /// pwshlib 2.x ignored it; the value may itself contain `=`).
    pub fn new<S: AsRef<str>>(
        code: String,
        timeout_ms: Option<u64>,
        working_dir: Option<String>,
        env_vars: &[S],
    ) -> Self {
        let env = env_vars
            .iter()
            .filter_map(|entry| {
                let (name, value) = entry.as_ref().split_once('=')?;
                (!name.is_empty() && !value.is_empty()).then(|| (name.to_owned(), value.to_owned()))
            })
            .collect();
        ExecuteRequest {
            id: 0,
            code,
            timeout_ms: effective_timeout_ms(timeout_ms),
            working_dir,
            env,
            prelude: None,
            secrets: Vec::new(),
            dsc: None,
            dsc_secrets: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ExecuteResult {
    /// The `id` of the request this answers. Absent only in results the
    /// manager makes up itself (failures that never reached a host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    pub exitcode: i32,
    #[serde(default)]
    pub stdout: Option<String>,
    #[serde(default)]
    pub stderr: String,
    /// The elements of the Ruby result's `stderr` Array, each with its line
    /// end, when the host sends them (host.ps1 does: a native program's
    /// stderr lines in a row are one element, as pwshlib 2.x read them);
    /// absent: `stderr` split into lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_items: Option<Vec<String>>,
    #[serde(default)]
    pub errormessage: Option<String>,
    #[serde(default)]
    pub native_stdout: Option<String>,
    /// The id of the prelude the code ran with; absent when it ran without
    /// one (a plain request, or a prelude the host could not define).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prelude: Option<String>,
}

/// The `exitcode` of a call whose host died or dropped the connection
/// during it, and of every later call on that dead manager: pwshlib 2.x
/// gave -1 there (its pipe broke), and callers tell a dead host from a
/// failing script by it.
pub const DEAD_HOST_EXITCODE: i32 = -1;

impl ExecuteResult {
    /// A failed call with only an error message (timeouts, dead hosts).
    pub fn failure(message: impl Into<String>) -> Self {
        ExecuteResult {
            exitcode: 1,
            errormessage: Some(message.into()),
            ..Default::default()
        }
    }

    /// A call on a host that died (or is dead already): as
    /// [`ExecuteResult::failure`] with [`DEAD_HOST_EXITCODE`].
    pub fn dead_host(message: impl Into<String>) -> Self {
        ExecuteResult {
            exitcode: DEAD_HOST_EXITCODE,
            ..ExecuteResult::failure(message)
        }
    }
}

/// Why a frame could not be read or written.
#[derive(Debug)]
pub enum FrameError {
    /// The transport failed (including timeouts and resets).
    Io(io::Error),
    /// The stream ended inside a frame.
    Truncated { expected: usize, got: usize },
    /// A length above [`MAX_FRAME_LEN`].
    TooLarge(u64),
    /// The payload is not valid UTF-8.
    BadUtf8(usize),
    /// The payload is not a known JSON message.
    BadMessage(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "i/o error: {e}"),
            FrameError::Truncated { expected, got } => {
                write!(f, "stream ended inside a frame ({got} of {expected} bytes)")
            }
            FrameError::TooLarge(len) => {
                write!(
                    f,
                    "frame length {len} exceeds the maximum of {MAX_FRAME_LEN}"
                )
            }
            FrameError::BadUtf8(at) => write!(f, "payload is not valid UTF-8 (at byte {at})"),
            FrameError::BadMessage(why) => write!(f, "payload is not a valid message: {why}"),
        }
    }
}

impl std::error::Error for FrameError {}

impl FrameError {
    /// True for a malformed peer (as opposed to a broken transport).
    pub fn is_malformed(&self) -> bool {
        !matches!(self, FrameError::Io(_))
    }
}

/// Serialises a message into one frame (length prefix included).
pub fn encode(message: &Message) -> Result<Vec<u8>, FrameError> {
    let mut frame = vec![0u8; 4];
    serde_json::to_writer(&mut frame, message)
        .map_err(|e| FrameError::BadMessage(e.to_string()))?;
    let len = frame.len() - 4;
    let prefix = match u32::try_from(len) {
        Ok(prefix) if len <= MAX_FRAME_LEN => prefix,
        _ => return Err(FrameError::TooLarge(len as u64)),
    };
    frame[..4].copy_from_slice(&prefix.to_be_bytes());
    Ok(frame)
}

/// Writes one frame and flushes.
pub fn write_message<W: Write>(writer: &mut W, message: &Message) -> Result<(), FrameError> {
    let frame = encode(message)?;
    writer.write_all(&frame).map_err(FrameError::Io)?;
    writer.flush().map_err(FrameError::Io)
}

/// Decodes one payload (without its length prefix).
pub fn decode_payload(payload: &[u8]) -> Result<Message, FrameError> {
    let text = std::str::from_utf8(payload).map_err(|e| FrameError::BadUtf8(e.valid_up_to()))?;
    serde_json::from_str(text).map_err(|e| FrameError::BadMessage(e.to_string()))
}

/// Reads one frame. `Ok(None)` is a clean end of stream between frames.
pub fn read_message<R: Read>(reader: &mut R) -> Result<Option<Message>, FrameError> {
    let mut prefix = [0u8; 4];
    let got = read_full(reader, &mut prefix)?;
    if got == 0 {
        return Ok(None);
    }
    if got < prefix.len() {
        return Err(FrameError::Truncated {
            expected: prefix.len(),
            got,
        });
    }
    let len = u32::from_be_bytes(prefix) as usize;
    if len > MAX_FRAME_LEN {
        return Err(FrameError::TooLarge(len as u64));
    }
    // Grow with the bytes that actually arrive: `take` bounds the read, and
    // the initial capacity is capped so a lying length allocates nothing big.
    let mut payload = Vec::with_capacity(len.min(64 * 1024));
    reader
        .take(len as u64)
        .read_to_end(&mut payload)
        .map_err(FrameError::Io)?;
    if payload.len() < len {
        return Err(FrameError::Truncated {
            expected: len,
            got: payload.len(),
        });
    }
    decode_payload(&payload).map(Some)
}

/// Fills `buf` unless the stream ends first; returns how much was read.
fn read_full<R: Read>(reader: &mut R, buf: &mut [u8]) -> Result<usize, FrameError> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_strings_become_pairs_and_an_empty_value_is_ignored() {
        let request = ExecuteRequest::new(
            "x".into(),
            None,
            None,
            &["A=1", "B=x=y", "novalue", "=empty", "C="],
        );
        assert_eq!(
            request.env,
            vec![("A".into(), "1".into()), ("B".into(), "x=y".into()),]
        );
        assert_eq!(request.timeout_ms, DEFAULT_TIMEOUT_MS);
    }

    #[test]
    fn prelude_fields_are_left_out_unless_used() {
        let plain = encode(&Message::Execute(ExecuteRequest::new(
            "x".into(),
            None,
            None,
            &[] as &[&str],
        )))
        .unwrap();
        assert!(!String::from_utf8_lossy(&plain).contains("prelude"));
        let old_hello = br#"{"type":"hello","protocol":1,"pid":1,"host":"old"}"#;
        match decode_payload(old_hello).unwrap() {
            Message::Hello { prelude, .. } => assert_eq!(prelude, 0),
            other => panic!("{other:?}"),
        }
        let result = br#"{"type":"result","exitcode":0,"prelude":"dsc-1"}"#;
        match decode_payload(result).unwrap() {
            Message::Result(result) => assert_eq!(result.prelude.as_deref(), Some("dsc-1")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn timeouts_are_floored() {
        assert_eq!(effective_timeout_ms(Some(1)), MIN_TIMEOUT_MS);
        assert_eq!(effective_timeout_ms(Some(0)), DEFAULT_TIMEOUT_MS);
        assert_eq!(effective_timeout_ms(Some(1234)), 1234);
    }
}
