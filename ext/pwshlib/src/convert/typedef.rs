//! `context.type`'s definition read into a [`TypeDef`].

use magnus::{prelude::*, Ruby, Value as RValue};
use pwshlib_core::TypeDef;

use super::{from_ruby, id, names};
use crate::error::BindingResult;

/// Reads `context.type.definition` into a [`TypeDef`].
pub fn type_definition_from_context(ruby: &Ruby, context: RValue) -> BindingResult<TypeDef> {
    let type_definition: RValue = context.funcall(id(ruby, &names::TYPE), ())?;
    let definition: RValue = type_definition.funcall(id(ruby, &names::DEFINITION), ())?;
    let definition = from_ruby(ruby, definition, "definition")?;
    Ok(TypeDef::from_definition(&definition)?)
}
