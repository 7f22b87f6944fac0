//! The one place where Rust errors become Ruby exceptions.

use magnus::{error::IntoError, prelude::*, ExceptionClass, RModule, Ruby};

/// What every binding method returns on failure. `?` turns both core errors
/// and Ruby errors into it; magnus turns it into an exception through
/// [`IntoError`], the one conversion.
#[derive(Debug)]
pub enum BindingError {
    Core(pwshlib_core::Error),
    Ruby(magnus::Error),
    /// A caller passed an argument the method cannot take: ArgumentError.
    Argument(String),
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
            BindingError::Argument(message) => f.write_str(message),
        }
    }
}

pub type BindingResult<T> = Result<T, BindingError>;

impl BindingError {
    /// A bug of ours caught at the boundary (a panic), reported rather than
    /// unwound across FFI.
    pub fn internal(message: &str) -> Self {
        BindingError::Core(pwshlib_core::Error::Host(format!(
            "pwshlib internal error: {message}"
        )))
    }
}

impl IntoError for BindingError {
    fn into_error(self, ruby: &Ruby) -> magnus::Error {
        match self {
            BindingError::Ruby(error) => error,
            BindingError::Argument(message) => {
                magnus::Error::new(ruby.exception_arg_error(), message)
            }
            BindingError::Core(error) => {
                magnus::Error::new(exception_class_for(ruby, &error), error.to_string())
            }
        }
    }
}

/// Puppet errors where Puppet is loaded (so Puppet reports them against the
/// resource and goes on). The manager's failures are `Pwsh::HostError` and
/// `Pwsh::ProtocolError` (lib/pwsh/error.rb: both `Pwsh::Error`, a
/// RuntimeError, so `rescue RuntimeError` still catches them). Where the
/// Ruby classes are not loaded: RuntimeError.
fn exception_class_for(ruby: &Ruby, error: &pwshlib_core::Error) -> ExceptionClass {
    use pwshlib_core::Error::{
        Host, InResource, InvalidTypeDefinition, InvalidValue, Invocation, MissingVendoredPath,
        Protocol,
    };
    let class = match error {
        Protocol(_) => ruby_exception(ruby, "Pwsh", "ProtocolError"),
        Host(_) => ruby_exception(ruby, "Pwsh", "HostError"),
        InvalidValue { .. }
        | InResource { .. }
        | InvalidTypeDefinition { .. }
        | MissingVendoredPath { .. }
        | Invocation(_) => ruby_exception(ruby, "Puppet", "Error"),
    };
    class.unwrap_or_else(|| ruby.exception_runtime_error())
}

/// `Namespace::Name`, when both are defined.
fn ruby_exception(ruby: &Ruby, namespace: &str, name: &str) -> Option<ExceptionClass> {
    let namespace: RModule = ruby.class_object().const_get(namespace).ok()?;
    namespace.const_get(name).ok()
}
