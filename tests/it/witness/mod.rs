//! Witnessed heads and `verify --witness`, through the library and the CLI.

mod cli;
mod library;
mod repeat;
mod rewrite;
