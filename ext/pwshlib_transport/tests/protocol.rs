//! The host protocol codec: round trips for every message shape, and
//! malformed input of every kind giving an error (never a panic, a hang or
//! an unbounded allocation).

use std::io::{Cursor, Read};

use proptest::prelude::*;
use pwshlib_transport::protocol::*;

fn round_trip(message: &Message) -> Message {
    let frame = encode(message).expect("encodes");
    let mut cursor = Cursor::new(frame);
    let decoded = read_message(&mut cursor)
        .expect("decodes")
        .expect("one frame");
    assert!(
        read_message(&mut cursor).expect("clean end").is_none(),
        "nothing after the frame"
    );
    decoded
}

fn frame_of(payload: &[u8]) -> Vec<u8> {
    let mut frame = u32::try_from(payload.len()).unwrap().to_be_bytes().to_vec();
    frame.extend_from_slice(payload);
    frame
}

fn decode_bytes(bytes: &[u8]) -> Result<Option<Message>, FrameError> {
    read_message(&mut Cursor::new(bytes))
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        // Favour the characters that break naive quoting and framing.
        proptest::collection::vec(
            prop_oneof![
                Just("'@".to_string()),
                Just("@'".to_string()),
                Just("\0".to_string()),
                Just("\"".to_string()),
                Just("\\".to_string()),
                Just("\r\n".to_string()),
                Just("\u{2019}".to_string()),
                Just("\u{1F600}".to_string()),
                "[a-z ]{0,8}",
            ],
            0..40
        )
        .prop_map(|parts| parts.concat()),
    ]
}

/// A bound secret of any kind, its texts anything JSON can carry.
fn any_secret() -> impl Strategy<Value = BoundSecret> {
    let value = prop_oneof![
        any_text().prop_map(|value| SecretValue::String { value }),
        any::<i64>().prop_map(|n| SecretValue::Integer {
            value: n.to_string()
        }),
        any::<f64>().prop_map(|x| SecretValue::Real {
            value: x.to_string()
        }),
        any::<bool>().prop_map(|value| SecretValue::Bool { value }),
        (any_text(), any_text())
            .prop_map(|(user, password)| SecretValue::Credential { user, password }),
    ];
    (any_text(), value).prop_map(|(name, value)| BoundSecret { name, value })
}

fn any_message() -> impl Strategy<Value = Message> {
    let execute = (
        any::<u64>(),
        any_text(),
        any::<u64>(),
        proptest::option::of(any_text()),
        proptest::collection::vec((any_text(), any_text()), 0..4),
        proptest::option::of((any_text(), proptest::option::of(any_text()))),
        proptest::collection::vec(any_secret(), 0..4),
    )
        .prop_map(
            |(id, code, timeout_ms, working_dir, env, prelude, secrets)| {
                Message::Execute(ExecuteRequest {
                    id,
                    code,
                    timeout_ms,
                    working_dir,
                    env,
                    prelude: prelude.map(|(id, code)| PreludeRef { id, code }),
                    secrets,
                    dsc: None,
                    dsc_secrets: Vec::new(),
                })
            },
        );
    let result = (
        proptest::option::of(any::<u64>()),
        any::<i32>(),
        proptest::option::of(any_text()),
        any_text(),
        proptest::option::of(any_text()),
        proptest::option::of(any_text()),
        proptest::option::of(any_text()),
    )
        .prop_map(
            |(id, exitcode, stdout, stderr, errormessage, native_stdout, prelude)| {
                Message::Result(ExecuteResult {
                    id,
                    prelude,
                    exitcode,
                    stdout,
                    stderr,
                    stderr_items: None,
                    errormessage,
                    native_stdout,
                })
            },
        );
    let hello = (
        any::<u32>(),
        any::<u32>(),
        any_text(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(protocol, pid, host, prelude, secrets)| Message::Hello {
            protocol,
            pid,
            host,
            prelude,
            secrets,
            assembly: None,
            dsc: 0,
        });
    prop_oneof![
        execute,
        result,
        hello,
        Just(Message::Exit),
        any_text().prop_map(|message| Message::Error { message }),
    ]
}

proptest! {
    #[test]
    fn every_message_round_trips(message in any_message()) {
        prop_assert_eq!(round_trip(&message), message);
    }

    #[test]
    fn a_stream_of_messages_round_trips(messages in proptest::collection::vec(any_message(), 0..6)) {
        let mut stream = Vec::new();
        for message in &messages {
            write_message(&mut stream, message).unwrap();
        }
        let mut cursor = Cursor::new(stream);
        let mut decoded = Vec::new();
        while let Some(message) = read_message(&mut cursor).unwrap() {
            decoded.push(message);
        }
        prop_assert_eq!(decoded, messages);
    }

    #[test]
    fn every_truncation_is_an_error(message in any_message(), cut in any::<prop::sample::Index>()) {
        let frame = encode(&message).unwrap();
        let cut = 1 + cut.index(frame.len() - 1); // 1..len: never empty, never whole
        let result = decode_bytes(&frame[..cut]);
        prop_assert!(
            matches!(result, Err(FrameError::Truncated { .. })),
            "cut at {} of {}: {:?}", cut, frame.len(), result
        );
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        // Any outcome is fine except a panic; the length is bounded by the input.
        let _ = decode_bytes(&bytes);
    }

    #[test]
    fn arbitrary_payloads_never_panic(payload in proptest::collection::vec(any::<u8>(), 0..512)) {
        match decode_bytes(&frame_of(&payload)) {
            Ok(Some(_)) | Err(_) => {}
            Ok(None) => prop_assert!(false, "a whole frame is never EOF"),
        }
    }

    #[test]
    fn flipped_bytes_never_panic(message in any_message(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut frame = encode(&message).unwrap();
        let at = at.index(frame.len());
        frame[at] ^= 1 << bit;
        let _ = decode_bytes(&frame);
    }
}

#[test]
fn empty_stream_is_eof() {
    assert!(decode_bytes(&[]).unwrap().is_none());
}

#[test]
fn wire_format_matches_the_documentation() {
    let request = Message::Execute(ExecuteRequest {
        id: 7,
        code: "Write-Output 'hi'".into(),
        timeout_ms: 300000,
        working_dir: Some("C:\\temp".into()),
        env: vec![("NAME".into(), "value".into())],
        prelude: None,
        secrets: Vec::new(),
        dsc: None,
        dsc_secrets: Vec::new(),
    });
    let frame = encode(&request).unwrap();
    let payload = &frame[4..];
    assert_eq!(
        &frame[..4],
        &u32::try_from(payload.len()).unwrap().to_be_bytes()
    );
    assert_eq!(
        std::str::from_utf8(payload).unwrap(),
        r#"{"type":"execute","id":7,"code":"Write-Output 'hi'","timeout_ms":300000,"working_dir":"C:\\temp","env":[["NAME","value"]]}"#
    );
    assert_eq!(
        std::str::from_utf8(&encode(&Message::Exit).unwrap()[4..]).unwrap(),
        r#"{"type":"exit"}"#
    );
    let hello = br#"{"type":"hello","protocol":1,"pid":4242,"host":"pwsh 7.4.1"}"#;
    assert_eq!(
        decode_bytes(&frame_of(hello)).unwrap().unwrap(),
        Message::Hello {
            protocol: 1,
            pid: 4242,
            host: "pwsh 7.4.1".into(),
            prelude: 0,
            secrets: 0,
            assembly: None,
            dsc: 0
        }
    );
    // docs/protocol.md, "Secrets": each bound variable by name and kind.
    let bound = Message::Execute(ExecuteRequest {
        secrets: vec![
            BoundSecret {
                name: "secret_1".into(),
                value: SecretValue::String {
                    value: "p'ss".into(),
                },
            },
            BoundSecret {
                name: "cred_2".into(),
                value: SecretValue::Credential {
                    user: "svc".into(),
                    password: "hunter2".into(),
                },
            },
        ],
        ..ExecuteRequest::new("$secret_1".into(), None, None, &[] as &[&str])
    });
    assert_eq!(
        std::str::from_utf8(&encode(&bound).unwrap()[4..]).unwrap(),
        r#"{"type":"execute","id":0,"code":"$secret_1","timeout_ms":300000,"working_dir":null,"env":[],"secrets":[{"name":"secret_1","kind":"string","value":"p'ss"},{"name":"cred_2","kind":"credential","user":"svc","password":"hunter2"}]}"#
    );
    // A request shows its secrets' names and kinds only.
    let shown = format!("{bound:?}");
    assert!(
        !shown.contains("p'ss") && !shown.contains("hunter2"),
        "{shown}"
    );
    assert!(
        shown.contains("BoundSecret(cred_2 credential, redacted)"),
        "{shown}"
    );
    let result = br#"{"type":"result","id":7,"exitcode":0,"stdout":"hi\n","stderr":"","errormessage":null,"native_stdout":null}"#;
    assert_eq!(
        decode_bytes(&frame_of(result)).unwrap().unwrap(),
        Message::Result(ExecuteResult {
            id: Some(7),
            exitcode: 0,
            stdout: Some("hi\n".into()),
            ..Default::default()
        })
    );
}

#[test]
fn code_with_nul_here_string_ends_and_five_megabytes_arrives_intact() {
    let mut code = String::from("Write-Output @'\n'@\0\u{0}'@ \"quoted\" \u{2019}\n'@\n");
    code.push_str(&"x\u{e9}\0'@".repeat(1_000_000)); // ~6 MB
    let message = Message::Execute(ExecuteRequest::new(code.clone(), Some(10), None, &["A=b"]));
    match round_trip(&message) {
        Message::Execute(request) => {
            assert_eq!(request.code, code);
            assert_eq!(request.timeout_ms, MIN_TIMEOUT_MS);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn huge_lengths_are_refused_before_reading() {
    // The payload is not there at all: if the decoder tried to read or
    // allocate 4 GiB first, this would fail differently (or not at all).
    for len in [u32::MAX, u32::try_from(MAX_FRAME_LEN).unwrap() + 1] {
        match decode_bytes(&len.to_be_bytes()) {
            Err(FrameError::TooLarge(got)) => assert_eq!(got, len as u64),
            other => panic!("length {len}: {other:?}"),
        }
    }
}

/// A reader that claims an endless supply of bytes but counts them: a
/// maximal-length frame whose payload never ends reads only what it asked for.
struct Endless {
    served: usize,
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(4096);
        buf[..n].fill(b' ');
        self.served += n;
        Ok(n)
    }
}

#[test]
fn a_maximal_length_reads_exactly_that_many_bytes() {
    let mut reader = std::io::Read::chain(
        Cursor::new(u32::try_from(MAX_FRAME_LEN).unwrap().to_be_bytes()),
        Endless { served: 0 },
    );
    // All spaces: valid UTF-8 but not JSON.
    let error = read_message(&mut reader).unwrap_err();
    assert!(matches!(error, FrameError::BadMessage(_)), "{error:?}");
    let (_, endless) = reader.into_inner();
    assert_eq!(endless.served, MAX_FRAME_LEN);
}

#[test]
fn lying_lengths_on_short_streams_are_truncations() {
    let mut bytes = 1_000_000u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(br#"{"type":"exit"}"#);
    assert!(matches!(
        decode_bytes(&bytes),
        Err(FrameError::Truncated {
            expected: 1_000_000,
            got: 15
        })
    ));
    assert!(matches!(
        decode_bytes(&[0, 0]),
        Err(FrameError::Truncated {
            expected: 4,
            got: 2
        })
    ));
}

#[test]
fn malformed_payloads_are_errors() {
    let cases: &[&[u8]] = &[
        b"",
        b"\xff\xfe",
        b"{\"type\":\"exit\"\xc3}",
        b"not json",
        b"[]",
        b"\"exit\"",
        b"{}",
        br#"{"type":"bogus"}"#,
        br#"{"type":7}"#,
        br#"{"type":"execute"}"#,
        br#"{"type":"execute","code":"x"}"#,
        br#"{"type":"execute","code":1,"timeout_ms":5}"#,
        br#"{"type":"execute","code":"x","timeout_ms":-1}"#,
        br#"{"type":"execute","code":"x","timeout_ms":5,"env":[["only-name"]]}"#,
        br#"{"type":"hello","protocol":1}"#,
        br#"{"type":"result"}"#,
        br#"{"type":"exit"} trailing"#,
    ];
    for payload in cases {
        let result = decode_bytes(&frame_of(payload));
        match result {
            Err(ref e) => assert!(e.is_malformed(), "{payload:?}: {e:?}"),
            Ok(ref m) => panic!("{:?} decoded as {m:?}", String::from_utf8_lossy(payload)),
        }
    }
    assert!(matches!(
        decode_bytes(&frame_of(b"\xff")),
        Err(FrameError::BadUtf8(0))
    ));
}

#[test]
fn unknown_fields_are_ignored_for_forward_compatibility() {
    let payload = br#"{"type":"exit","future":true}"#;
    assert_eq!(
        decode_bytes(&frame_of(payload)).unwrap().unwrap(),
        Message::Exit
    );
}

/// A peer that sent a bad frame is told from a connection that broke: the
/// host's callers word the two differently (host.rs, `wait_call`; the
/// simulator answers a malformed frame with an `error` message).
#[test]
fn frame_errors_tell_a_malformed_peer_from_a_broken_connection() {
    let error = FrameError::TooLarge(1 << 40);
    assert!(error.is_malformed());
    assert!(error.to_string().starts_with("frame length"), "{error}");
    let error = FrameError::Io(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
    assert!(!error.is_malformed());
    assert!(error.to_string().starts_with("i/o error: "), "{error}");
}

/// docs/protocol.md, "DSC calls as data": the call after the secrets,
/// its code empty.
#[test]
fn a_dsc_call_as_data_matches_the_documentation() {
    let data = Message::Execute(ExecuteRequest {
        dsc: Some(
            serde_json::json!({"name": "File", "method": "Get", "module": {"name": "M"}, "properties": {"n": {"var": "secret_1"}}}),
        ),
        ..ExecuteRequest::new(String::new(), None, None, &[] as &[&str])
    });
    assert_eq!(
        std::str::from_utf8(&encode(&data).unwrap()[4..]).unwrap(),
        r#"{"type":"execute","id":0,"code":"","timeout_ms":300000,"working_dir":null,"env":[],"dsc":{"name":"File","method":"Get","module":{"name":"M"},"properties":{"n":{"var":"secret_1"}}}}"#
    );
}
