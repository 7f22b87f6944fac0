//! What the simulated host does with one `execute` request. Both the DSC
//! engine (`dsc/`) and echo mode (`echo.rs`) produce an [`Outcome`]; the
//! main loop carries it out against the request's timeout.

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Answer with a result frame.
    Reply {
        stdout: Option<String>,
        stderr: String,
        exitcode: i32,
        errormessage: Option<String>,
    },
    /// Wait, then carry out `then`. If the wait would pass the request's
    /// timeout, the main loop replies with the timeout error at the deadline
    /// instead (and the host stays usable), as the real host does, with
    /// the output of the last of `written` that comes before the deadline
    /// (host.ps1 returns what the code wrote before it was stopped).
    Sleep {
        millis: u64,
        then: Box<Outcome>,
        written: Vec<Written>,
    },
    /// Never answer (ignores the timeout): for the manager's own deadline.
    HangForever,
    /// Die mid-call without answering.
    Crash,
}

/// What a script had written when `after_ms` of its sleeping had passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub after_ms: u64,
    pub stdout: Option<String>,
    pub stderr: String,
}

impl Outcome {
    /// A successful reply with this stdout.
    pub fn stdout(text: impl Into<String>) -> Self {
        Outcome::Reply {
            stdout: Some(text.into()),
            stderr: String::new(),
            exitcode: 0,
            errormessage: None,
        }
    }

    /// A failed reply with this error message.
    pub fn error(message: impl Into<String>) -> Self {
        Outcome::Reply {
            stdout: None,
            stderr: String::new(),
            exitcode: 1,
            errormessage: Some(message.into()),
        }
    }
}
