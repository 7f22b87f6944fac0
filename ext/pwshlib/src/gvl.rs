//! Running blocking Rust code without Ruby's global VM lock.
//!
//! [`without_gvl`] runs a closure through `rb_nogvl`, so other Ruby threads
//! run while we wait on the host. Ruby calls the unblocking closure, from
//! another thread or from a signal handler, for an interrupt (Ctrl-C,
//! `Thread#raise`, `Timeout.timeout`) but also for any signal it handles (a
//! SIGCHLD from any child, a `trap`), so it must only wake the wait: when
//! nothing raises, the caller waits again (`Released::Done`). We pass
//! `RB_NOGVL_UBF_ASYNC_SAFE`, because without
//! it Ruby starts a helper thread for every call made from the main thread
//! (that cost ~0.2-1 ms per execute here). The unblocking closure must
//! therefore be async-signal-safe (atomics and plain syscalls only, no
//! locks, no allocation) and make the blocking closure return soon. Ruby may
//! then raise the pending exception as the lock is taken back: that raise is
//! caught with `rb_protect` and handed back as an `Err`, so it never unwinds
//! through Rust frames; the caller cleans up and returns the error.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use magnus::rb_sys::protect;

use crate::error::{BindingError, BindingResult};

/// The blocking closure and the slot for its result, behind one pointer.
struct Blocking<F, R> {
    func: Option<F>,
    result: Option<std::thread::Result<R>>,
}

unsafe extern "C" fn call_blocking<F, R>(data: *mut c_void) -> *mut c_void
where
    F: FnOnce() -> R,
{
    // SAFETY: `data` is the `&mut Blocking<F, R>` that `without_gvl` passed
    // as data1; it outlives the call and nothing else touches it meanwhile
    // (the unblocking function gets a different pointer).
    let blocking = unsafe { &mut *(data as *mut Blocking<F, R>) };
    if let Some(func) = blocking.func.take() {
        blocking.result = Some(catch_unwind(AssertUnwindSafe(func)));
    }
    std::ptr::null_mut()
}

unsafe extern "C" fn call_unblock<U>(data: *mut c_void)
where
    U: Fn(),
{
    // SAFETY: `data` is the `&U` that `without_gvl` passed as data2; it lives
    // on that function's stack until rb_thread_call_without_gvl returns, and
    // Ruby only calls this function before then. `U: Sync` (checked in
    // `without_gvl`) makes the shared access from another thread sound.
    let unblock = unsafe { &*(data as *const U) };
    // A panic must not cross into C; the worst case is a slower wake-up.
    let _ = catch_unwind(AssertUnwindSafe(unblock));
}

/// What came out of [`without_gvl`].
pub enum Released<R> {
    /// The closure ran to completion.
    Done(R),
    /// The closure panicked (a bug); the message is for an exception.
    Panicked(String),
    /// Ruby raised (an interrupt) before or after the closure; the closure's
    /// result, if it ran, comes with it so that the caller can clean up.
    Raised(magnus::Error, Option<R>),
}

impl<R> Released<R> {
    /// The closure's result, or the error to hand to Ruby: a panic becomes
    /// an internal error, an exception Ruby raised is passed on. Before an
    /// error is returned, `clean_up` gets the closure's result if it ran
    /// (a host to destroy, a call to abandon).
    pub fn into_result(self, clean_up: impl FnOnce(Option<R>)) -> BindingResult<R> {
        match self {
            Released::Done(value) => Ok(value),
            Released::Panicked(message) => {
                clean_up(None);
                Err(BindingError::internal(&message))
            }
            Released::Raised(error, value) => {
                clean_up(value);
                Err(error.into())
            }
        }
    }
}

/// Runs `func` without the GVL; `unblock` is called (from another thread or
/// a signal handler, so it must be async-signal-safe) when Ruby wants this
/// thread to stop waiting.
pub fn without_gvl<F, R, U>(func: F, unblock: U) -> Released<R>
where
    F: FnOnce() -> R + Send,
    R: Send,
    U: Fn() + Sync,
{
    let mut blocking = Blocking::<F, R> {
        func: Some(func),
        result: None,
    };
    let blocking_ptr = &mut blocking as *mut Blocking<F, R> as *mut c_void;
    let unblock_ptr = &unblock as *const U as *mut c_void;
    let protected = protect(|| {
        // SAFETY: both pointers refer to locals of this function that outlive
        // the call; the callbacks are instantiated for exactly these types.
        // The blocking closure touches no Ruby object (it is `Send` and gets
        // only owned Rust data), as running without the GVL requires. The
        // async-safe flag is honest as long as callers keep `unblock` to
        // atomics and syscalls (documented above and at each call site).
        unsafe {
            rb_sys::rb_nogvl(
                Some(call_blocking::<F, R>),
                blocking_ptr,
                Some(call_unblock::<U>),
                unblock_ptr,
                rb_sys::RB_NOGVL_UBF_ASYNC_SAFE as std::os::raw::c_int,
            );
        }
        rb_sys::Qnil as rb_sys::VALUE
    });
    let outcome = match blocking.result.take() {
        Some(Ok(value)) => Some(value),
        Some(Err(panic)) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            return Released::Panicked(message);
        }
        None => None,
    };
    match (protected, outcome) {
        (Ok(_), Some(value)) => Released::Done(value),
        (Ok(_), None) => Released::Panicked("the blocking call did not run".into()),
        (Err(error), value) => Released::Raised(error, value),
    }
}
