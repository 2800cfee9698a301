//! `glimmer`: the command-line front end (being written).
fn main() {}
