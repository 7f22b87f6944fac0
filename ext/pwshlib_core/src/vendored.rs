//! Where a Puppet module keeps its vendored DSC resources. STUB: the
//! script-building work fills this in; the signatures are the contract.

use crate::error::{Error, Result};

/// `PowerShellGet` → `powershellget`; `[^a-z0-9_]` → `_`; leading digit → `a…`.
pub fn puppetize_name(name: &str) -> String {
    name.to_lowercase()
}

/// Finds `lib/puppet_x/<puppetized>/dsc_resources` (or the older
/// `lib/puppet_x/dsc_resources`) under the entries of Ruby's load path.
pub fn vendored_modules_path(_load_path: &[String], module_name: &str) -> Result<String> {
    Err(Error::MissingVendoredPath {
        module: module_name.to_owned(),
        searched: String::new(),
    })
}
