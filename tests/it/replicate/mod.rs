//! `replicate` and `verify --replica-of`, through the library and the CLI.

mod cli;
mod library;
