//! The core's PowerShell literal rules for Ruby's `Pwsh::Util`
//! (lib/pwsh/util.rb), so that the 2.x helpers and the provider quote text
//! the same way, with one set of quote characters:
//! `Pwshlib.powershell_literal(value)`, `Pwshlib.escape_quotes(text)` and
//! `Pwshlib::SINGLE_QUOTES`.

use magnus::{function, prelude::*, Error, RString, Ruby, Value as RValue};
use pwshlib_core::literal::{self, SINGLE_QUOTES};

use crate::convert::{from_ruby, lossy_string};
use crate::error::{BindingError, BindingResult};

/// `Pwshlib.powershell_literal(value)`: nil, true, false, an Integer, a
/// Float or a String as a PowerShell literal (`pwshlib_core::literal`);
/// ArgumentError for a value that has none (NaN, a String holding NUL, …).
fn powershell_literal(ruby: &Ruby, value: RValue) -> BindingResult<String> {
    let formatted = from_ruby(ruby, value, "value")
        .and_then(|value| Ok(literal::format_value(&value)?.text().to_owned()));
    // A bad argument, not a resource's failure: ArgumentError, as 2.x
    // raised for a value it could not format.
    formatted.map_err(|error| match error {
        BindingError::Core(core) => BindingError::Argument(core.to_string()),
        other => other,
    })
}

/// `Pwshlib.escape_quotes(text)`: every PowerShell single-quote character
/// doubled.
fn escape_quotes(text: RString) -> String {
    literal::escape_quotes(&lossy_string(text))
}

pub fn init(ruby: &Ruby) -> Result<(), Error> {
    let pwshlib = ruby.define_module("Pwshlib")?;
    pwshlib.define_module_function("powershell_literal", function!(powershell_literal, 1))?;
    pwshlib.define_module_function("escape_quotes", function!(escape_quotes, 1))?;
    let quotes = ruby.str_new(&SINGLE_QUOTES.iter().collect::<String>());
    quotes.freeze();
    pwshlib.const_set("SINGLE_QUOTES", quotes)?;
    Ok(())
}
