//! One error type for the whole core: what a resource's values, its type or
//! its DSC call did wrong. The core talks to no host: the host's failures
//! are the binding's (`BindingError::Host`). The binding maps both to Ruby
//! exceptions in exactly one place.

use thiserror::Error as ThisError;

#[derive(Debug, ThisError, Clone, PartialEq)]
pub enum Error {
    /// A value of a kind the provider cannot send to PowerShell.
    #[error("{attribute}: unsupported value: {message}")]
    InvalidValue { attribute: String, message: String },

    /// An error about one resource's values, naming the resource
    /// (`dsc_foo[title]`) in front of the attribute path.
    #[error("{resource}: {source}")]
    InResource {
        resource: String,
        source: Box<Error>,
    },

    /// The type definition handed over by the Resource API is malformed.
    #[error("invalid type definition for {type_name}: {message}")]
    InvalidTypeDefinition { type_name: String, message: String },

    /// The vendored DSC resource folder could not be found on the load path.
    #[error("Unable to find the vendored DSC resources for module '{module}': none of these folders exists: {searched}")]
    MissingVendoredPath { module: String, searched: String },

    /// A DSC invocation failed in a way that is the resource's own problem.
    #[error("{0}")]
    Invocation(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
