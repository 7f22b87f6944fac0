//! What every wait on the connection reads and writes through: one overall
//! deadline, cut short by a wake ([`Deadlined`]), and the bytes received so
//! far replayed first ([`Replay`]), so that a wait resumed after a wake
//! parses its frame from the start.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use super::{Cancel, Connection};

/// A connection with one overall deadline for every read and write, cut
/// short when the call's [`Cancel`] wakes it.
pub(super) struct Deadlined<'a> {
    connection: &'a mut Connection,
    deadline: Instant,
    cancel: &'a Cancel,
}

impl<'a> Deadlined<'a> {
    pub(super) fn new(
        connection: &'a mut Connection,
        deadline: Instant,
        cancel: &'a Cancel,
    ) -> Self {
        Deadlined {
            connection,
            deadline,
            cancel,
        }
    }
}

impl Read for Deadlined<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.connection.read(buf, self.deadline, self.cancel)
    }
}

impl Write for Deadlined<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.connection.write(buf, self.deadline, self.cancel)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The time left before `deadline`, or `TimedOut` once it has passed.
pub(super) fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(io::ErrorKind::TimedOut.into())
    } else {
        Ok(left)
    }
}

/// The error a woken wait gives. Not `ErrorKind::Interrupted`: std's
/// `read_exact` retries those, which would spin on a woken call.
pub(super) fn woken_error() -> io::Error {
    io::Error::other("the wait for the PowerShell host was woken")
}

/// Reads `recorded` first, then the live channel, recording what that
/// gives: a frame parser run over it again after a wake sees the same bytes.
pub(super) struct Replay<'a, R> {
    recorded: &'a mut Vec<u8>,
    replayed: usize,
    live: R,
}

impl<'a, R: Read> Replay<'a, R> {
    pub(super) fn new(recorded: &'a mut Vec<u8>, live: R) -> Self {
        Replay {
            recorded,
            replayed: 0,
            live,
        }
    }
}

impl<R: Read> Read for Replay<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let old = &self.recorded[self.replayed..];
        if !old.is_empty() {
            let count = old.len().min(buf.len());
            buf[..count].copy_from_slice(&old[..count]);
            self.replayed += count;
            return Ok(count);
        }
        let count = self.live.read(buf)?;
        self.recorded.extend_from_slice(&buf[..count]);
        self.replayed += count;
        Ok(count)
    }
}
