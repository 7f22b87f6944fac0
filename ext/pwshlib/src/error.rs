//! The one place where Rust errors become Ruby exceptions.

use std::sync::OnceLock;

use magnus::{error::IntoError, prelude::*, value::Opaque, ExceptionClass, RModule, Ruby};

/// What every binding method returns on failure. `?` turns both core errors
/// and Ruby errors into it; magnus turns it into an exception through
/// [`IntoError`], the one conversion.
#[derive(Debug)]
pub enum BindingError {
    /// A resource's values, type or DSC call: `Puppet::Error`.
    Core(pwshlib_core::Error),
    Ruby(magnus::Error),
    /// A caller passed an argument the method cannot take: ArgumentError.
    Argument(String),
    /// The PowerShell host could not be started, reached, or died:
    /// `Pwsh::HostError`.
    Host(String),
    /// A bug of ours caught at the boundary (a panic), reported rather than
    /// unwound across FFI: `Pwsh::InternalError`.
    Internal(String),
}

impl From<pwshlib_core::Error> for BindingError {
    fn from(error: pwshlib_core::Error) -> Self {
        BindingError::Core(error)
    }
}

impl From<magnus::Error> for BindingError {
    fn from(error: magnus::Error) -> Self {
        BindingError::Ruby(error)
    }
}

/// The message alone, as the lifecycle quotes an error in a log line.
impl std::fmt::Display for BindingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindingError::Core(error) => std::fmt::Display::fmt(error, f),
            BindingError::Ruby(error) => std::fmt::Display::fmt(error, f),
            BindingError::Argument(message) | BindingError::Host(message) => f.write_str(message),
            BindingError::Internal(message) => write!(f, "pwshlib internal error: {message}"),
        }
    }
}

pub type BindingResult<T> = Result<T, BindingError>;

impl BindingError {
    /// A panic's message, as the exception that reports it.
    pub fn internal(message: &str) -> Self {
        BindingError::Internal(message.to_owned())
    }
}

impl IntoError for BindingError {
    fn into_error(self, ruby: &Ruby) -> magnus::Error {
        let message = self.to_string();
        let class = match self {
            BindingError::Ruby(error) => return error,
            BindingError::Argument(_) => {
                return magnus::Error::new(ruby.exception_arg_error(), message)
            }
            BindingError::Host(_) => PWSH_HOST_ERROR.get(ruby),
            BindingError::Internal(_) => PWSH_INTERNAL_ERROR.get(ruby),
            BindingError::Core(_) => PUPPET_ERROR.get(ruby),
        };
        magnus::Error::new(
            class.unwrap_or_else(|| ruby.exception_runtime_error()),
            message,
        )
    }
}

/// An exception class found by its constant path the first time it is
/// there, then kept for the process: Puppet's errors where Puppet is
/// loaded (so Puppet reports them against the resource and goes on), the
/// manager's (lib/pwsh/error.rb: each a `Pwsh::Error`, a RuntimeError, so
/// `rescue RuntimeError` still catches them). Until it is defined (Puppet
/// not loaded): None, and the caller raises RuntimeError.
struct ExceptionConstant {
    namespace: &'static str,
    name: &'static str,
    found: OnceLock<Opaque<ExceptionClass>>,
}

static PUPPET_ERROR: ExceptionConstant = ExceptionConstant::new("Puppet", "Error");
static PWSH_HOST_ERROR: ExceptionConstant = ExceptionConstant::new("Pwsh", "HostError");
static PWSH_INTERNAL_ERROR: ExceptionConstant = ExceptionConstant::new("Pwsh", "InternalError");

impl ExceptionConstant {
    const fn new(namespace: &'static str, name: &'static str) -> Self {
        ExceptionConstant {
            namespace,
            name,
            found: OnceLock::new(),
        }
    }

    fn get(&self, ruby: &Ruby) -> Option<ExceptionClass> {
        if let Some(found) = self.found.get() {
            return Some(ruby.get_inner(*found));
        }
        let namespace: RModule = ruby.class_object().const_get(self.namespace).ok()?;
        let class: ExceptionClass = namespace.const_get(self.name).ok()?;
        // Kept from the collector for the process, as the constant keeps it.
        ruby.gc_register_mark_object(class);
        Some(ruby.get_inner(*self.found.get_or_init(|| Opaque::from(class))))
    }
}
