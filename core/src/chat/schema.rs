//! schema
/// x
pub struct ToolSchema<'a> { /// n
pub name: &'a str }
