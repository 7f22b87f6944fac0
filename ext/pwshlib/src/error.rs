//! The one place where Rust errors become Ruby exceptions.

use magnus::{error::IntoError, prelude::*, ExceptionClass, RModule, Ruby};

/// What every binding method returns on failure. `?` turns both core errors
/// and Ruby errors into it; magnus turns it into an exception through
/// [`IntoError`].
#[derive(Debug)]
pub enum BindingError {
    Core(pwshlib_core::Error),
    Ruby(magnus::Error),
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

pub type BindingResult<T> = Result<T, BindingError>;

impl IntoError for BindingError {
    fn into_error(self, ruby: &Ruby) -> magnus::Error {
        match self {
            BindingError::Ruby(error) => error,
            BindingError::Core(error) => {
                magnus::Error::new(exception_class_for(ruby, &error), error.to_string())
            }
        }
    }
}

/// Puppet errors where Puppet is loaded (so Puppet reports them against the
/// resource and goes on); plain RuntimeError for `Pwsh::Manager` users
/// without Puppet.
fn exception_class_for(ruby: &Ruby, error: &pwshlib_core::Error) -> ExceptionClass {
    use pwshlib_core::Error::*;
    match error {
        Protocol(_) | Host(_) => ruby.exception_runtime_error(),
        InvalidValue { .. }
        | InResource { .. }
        | InvalidTypeDefinition { .. }
        | MissingVendoredPath { .. }
        | Invocation(_) => puppet_error(ruby).unwrap_or_else(|| ruby.exception_runtime_error()),
    }
}

fn puppet_error(ruby: &Ruby) -> Option<ExceptionClass> {
    let puppet: RModule = ruby.class_object().const_get("Puppet").ok()?;
    puppet.const_get("Error").ok()
}
