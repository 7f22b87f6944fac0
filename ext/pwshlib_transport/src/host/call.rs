//! One request and its reply: the request numbered and framed, sent (a
//! prelude's text only while the host does not hold it), the reply read
//! under the call's deadline, and every way a reply can be wrong worded
//! for the caller. A wake leaves the call in flight, to be waited on again.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use super::channel::{Deadlined, Replay};
use super::{Cancel, Connection, Host, HostFailure, Prelude, READ_GRACE, READ_GRACE_MS};
use crate::protocol::{self, ExecuteRequest, ExecuteResult, FrameError, Message, PreludeRef};

impl Host {
    /// Runs `request.code` after `prelude`'s functions are defined; as
    /// [`Host::start_call_with_prelude`] then [`Host::wait_call`], a wake
    /// ending the call as interrupted.
    pub fn execute_with_prelude(
        &mut self,
        prelude: Prelude<'_>,
        request: ExecuteRequest,
        cancel: &Cancel,
    ) -> Result<ExecuteResult, HostFailure> {
        let call = self.start_call_with_prelude(prelude, request, None)?;
        self.finish_call(call, cancel)
    }

    /// Prepares a request whose code runs after `prelude`'s functions are
    /// defined. A host that offers preludes gets the prelude's text once per
    /// session (with the first such request) and afterwards only its id; an
    /// older host gets the whole script, prelude first, as one plain request.
    /// `inline` is the code to send instead, the request's secrets set by
    /// literals in it, to a host that cannot bind them (docs/protocol.md,
    /// "Secrets"); it is copied only then. A request's `dsc` goes only to a
    /// host that offers it (its `code` then empty), else the `code` does.
    pub fn start_call_with_prelude(
        &mut self,
        prelude: Prelude<'_>,
        mut request: ExecuteRequest,
        inline: Option<&str>,
    ) -> Result<Call, HostFailure> {
        // A DSC call as data goes as data to a host that offers it, its
        // code then left out; any other host gets the code.
        if request.dsc.is_some() {
            if self.dsc_version < protocol::DSC_VERSION {
                request.dsc = None;
            } else {
                request.code.clear();
                request.secrets = std::mem::take(&mut request.dsc_secrets);
            }
        }
        if self.secrets_version < protocol::SECRETS_VERSION {
            request.secrets.clear();
            if let Some(inline) = inline {
                inline.clone_into(&mut request.code);
            }
        }
        if self.prelude_version < protocol::PRELUDE_VERSION {
            request.code.insert_str(0, prelude.code);
            request.prelude = None;
            return self.start_call(&request);
        }
        let held = self.installed_prelude.as_deref() == Some(prelude.id);
        request.prelude = Some(PreludeRef {
            id: prelude.id.to_owned(),
            code: (!held).then(|| prelude.code.to_owned()),
        });
        let mut call = self.start_call(&request)?;
        call.prelude_id = Some(prelude.id.to_owned());
        Ok(call)
    }

    /// Sends one request and waits for its result, at most timeout + grace;
    /// as [`Host::start_call`] then [`Host::wait_call`], a wake ending the
    /// call as interrupted. `Err` means the host can no longer be trusted:
    /// the caller must destroy it and report the message as the call's error.
    pub fn execute(
        &mut self,
        request: &ExecuteRequest,
        cancel: &Cancel,
    ) -> Result<ExecuteResult, HostFailure> {
        let call = self.start_call(request)?;
        self.finish_call(call, cancel)
    }

    fn finish_call(
        &mut self,
        mut call: Call,
        cancel: &Cancel,
    ) -> Result<ExecuteResult, HostFailure> {
        match self.wait_call(&mut call, cancel) {
            Waited::Finished(result) => result,
            Waited::Woken => Err(HostFailure(INTERRUPTED.into())),
        }
    }

    /// Gives the request its id and frames it; nothing is sent yet. Its
    /// deadline (timeout + grace) starts now. `Err`: as for `execute`.
    pub fn start_call(&mut self, request: &ExecuteRequest) -> Result<Call, HostFailure> {
        if self.is_foreign() {
            return Err(HostFailure(
                "This manager's PowerShell host belongs to the parent process (the manager was inherited through fork); call Pwsh::Manager.instance for a new one".into(),
            ));
        }
        let deadline = Instant::now() + Duration::from_millis(request.timeout_ms) + READ_GRACE;
        self.last_request_id += 1;
        let id = self.last_request_id;
        let frame = protocol::encode(&Message::Execute(ExecuteRequest {
            id,
            ..request.clone()
        }))
        .map_err(|e| {
            HostFailure(format!(
                "The request could not be sent to the PowerShell host ({e})"
            ))
        })?;
        Ok(Call {
            id,
            timeout_ms: request.timeout_ms,
            deadline,
            frame,
            written: 0,
            reply: Vec::new(),
            prelude_id: None,
        })
    }

    /// Sends what the host does not have yet of `call`'s request and waits
    /// for its reply until the call's deadline, or until woken.
    pub fn wait_call(&mut self, call: &mut Call, cancel: &Cancel) -> Waited {
        let outcome = exchange(&mut self.connection, call, cancel);
        if matches!(outcome, Err(FrameError::Io(_))) && cancel.is_woken() {
            // Whatever the i/o error was, it recurs when resumed if real.
            return Waited::Woken;
        }
        let (sent, received) = (call.written as u64, call.reply.len() as u64);
        self.wire.requests += 1;
        self.wire.bytes_sent += sent;
        self.wire.bytes_received += received;
        self.wire.last_sent = sent;
        self.wire.last_received = received;
        let id = call.id;
        let failure = match outcome {
            Ok(Some(Message::Result(result))) if result.id == Some(id) => {
                if let Some(prelude_id) = call.prelude_id.take() {
                    // Only the host's word counts: a prelude it could not
                    // define (or has lost) is sent again with the next request.
                    self.installed_prelude =
                        (result.prelude.as_deref() == Some(prelude_id.as_str())).then_some(prelude_id);
                }
                return Waited::Finished(Ok(result));
            }
            // A reply left over from an earlier request (a host that answered
            // twice), or one that answers nothing we asked: from here on no
            // reply can be trusted to be this request's, so the host goes.
            Ok(Some(Message::Result(result))) => format!(
                "The PowerShell host broke the protocol: the reply to request {id} carried {}; it was killed",
                match result.id {
                    Some(other) => format!("the id of request {other}"),
                    None => "no request id".to_string(),
                }
            ),
            Ok(Some(Message::Error { message })) => {
                format!("The PowerShell host rejected the request: {message}")
            }
            Ok(Some(other)) => {
                format!("The PowerShell host sent an unexpected message: {other:?}")
            }
            Err(FrameError::Io(e)) if e.kind() == io::ErrorKind::TimedOut => format!(
                "The PowerShell host stopped responding: no result within {} ms (the timeout of {} ms plus {READ_GRACE_MS} ms grace); it was killed",
                call.timeout_ms + READ_GRACE_MS,
                call.timeout_ms,
            ),
            Ok(None) | Err(FrameError::Io(_)) => {
                self.lost = true;
                self.dead_host_message()
            }
            Err(e) => format!("The PowerShell host sent a malformed reply ({e}); it was killed"),
        };
        Waited::Finished(Err(HostFailure(failure)))
    }

    fn dead_host_message(&mut self) -> String {
        // Give a dying process a moment, so the message can say how it ended.
        for _ in 0..20 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return format!("The PowerShell host died during the call ({status})");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        "The PowerShell host closed the connection during the call".to_string()
    }
}

/// A request on its way: sent (perhaps only in part) and waiting for its
/// reply. A wait woken through its [`Cancel`] leaves everything here, so
/// that [`Host::wait_call`] can go on where it stopped.
pub struct Call {
    id: u64,
    timeout_ms: u64,
    deadline: Instant,
    /// The whole request frame, and how much of it the host has.
    frame: Vec<u8>,
    written: usize,
    /// Every byte of the reply received so far (replayed when resumed).
    reply: Vec<u8>,
    /// The prelude the request carried, if any: the result says whether the
    /// host now holds it.
    prelude_id: Option<String>,
}

/// How a [`Host::wait_call`] ended.
pub enum Waited {
    /// The call is over. `Err`: the host can no longer be trusted; the
    /// caller must destroy it and report the message as the call's error.
    Finished(Result<ExecuteResult, HostFailure>),
    /// Woken through the [`Cancel`] before the reply was whole: the call is
    /// still in flight; wait on it again or destroy the host.
    Woken,
}

const INTERRUPTED: &str = "The call was interrupted; the PowerShell host was killed";

/// Writes the rest of `call`'s request, then reads its reply: the bytes
/// already received are replayed first, so a resumed wait parses the reply
/// from its start (wake-ups are rare; parsing again is cheap).
fn exchange(
    connection: &mut Connection,
    call: &mut Call,
    cancel: &Cancel,
) -> Result<Option<Message>, FrameError> {
    let mut channel = Deadlined::new(connection, call.deadline, cancel);
    while call.written < call.frame.len() {
        let written = channel
            .write(&call.frame[call.written..])
            .map_err(FrameError::Io)?;
        if written == 0 {
            return Err(FrameError::Io(io::ErrorKind::WriteZero.into()));
        }
        call.written += written;
    }
    protocol::read_message(&mut Replay::new(&mut call.reply, channel))
}
