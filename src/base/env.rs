//! The process's environment as the write path sees it: injected, as the clock is
//! ([`crate::base::clock`]), so a test decides what a writer finds there and no library
//! code reads the real environment behind its caller's back. [`ProcessEnv`] is the one
//! place that reads it (the CLI and the Python package hand it to the writer); tests hand
//! a [`MapEnv`].

use std::collections::BTreeMap;

/// Where environment variables and the host name come from.
pub trait Environment: Send + Sync + std::fmt::Debug {
    /// The value of the variable `name`, when set and not empty.
    fn var(&self, name: &str) -> Option<String>;
    /// This machine's host name, when it has one.
    fn host_name(&self) -> Option<String>;
}

/// The real process environment and host name.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessEnv;

impl Environment for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
    fn host_name(&self) -> Option<String> {
        let u = rustix::system::uname();
        let name = u.nodename().to_string_lossy().trim().to_string();
        (!name.is_empty()).then_some(name)
    }
}

/// A fixed environment (tests): the variables given, and a host name.
#[derive(Debug, Default, Clone)]
pub struct MapEnv {
    /// The variables.
    pub vars: BTreeMap<String, String>,
    /// The host name.
    pub host: Option<String>,
}

impl MapEnv {
    /// An environment holding `vars`, on host `host`.
    pub fn new<'a>(host: Option<&str>, vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            host: host.map(str::to_string),
        }
    }
}

impl Environment for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.vars
            .get(name)
            .filter(|v| !v.trim().is_empty())
            .cloned()
    }
    fn host_name(&self) -> Option<String> {
        self.host.clone()
    }
}
