//! How a store is opened, beyond its URL: [`StoreOptions`], and whose environment
//! variables are the store's own ([`SideEnv`]).

use crate::base::limits::ReadLimits;

/// What the caller of [`open`](crate::publish::store::open) expects to find at the URL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Opening {
    /// A store, possibly new (made by its first write): `append`, `demo`, the library.
    #[default]
    Store,
    /// A store that holds objects: refused (nothing created) when it holds none, for every
    /// command that only reads or seals (an empty store is a mistyped URL).
    ExistingStore,
    /// A location that holds other objects of ours, not a store (the shard reports of
    /// `verify --report-dir`): not refused for holding other files. Still create-only.
    Location,
}

/// Everything about opening a store that is not in its URL.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct StoreOptions {
    /// S3 endpoint (e.g. `http://127.0.0.1:4566` for LocalStack); overrides
    /// `AWS_ENDPOINT_URL_S3` and `AWS_ENDPOINT_URL`.
    pub endpoint_url: Option<String>,
    /// Which environment variables are this store's own (see [`SideEnv`]).
    pub env: SideEnv,
    /// What its readers read at most.
    pub limits: ReadLimits,
    /// What is expected at the URL.
    pub opening: Opening,
}

impl StoreOptions {
    /// The defaults: a store, possibly new; the plain environment; the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// With an S3 endpoint (`None`: from the environment).
    pub fn endpoint_url(mut self, url: Option<String>) -> Self {
        self.endpoint_url = url;
        self
    }

    /// With this store's own environment variables.
    pub fn env(mut self, env: SideEnv) -> Self {
        self.env = env;
        self
    }

    /// With these read limits.
    pub fn limits(mut self, limits: ReadLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Expecting `opening` at the URL.
    pub fn opening(mut self, opening: Opening) -> Self {
        self.opening = opening;
        self
    }
}

/// Where one store's settings come from: the process environment, in which, for a store
/// opened with a prefix, a variable `<prefix>NAME` takes precedence over `NAME`. So two
/// stores opened by one command can use two accounts, profiles, regions or clouds, and no
/// credential ever appears on a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SideEnv {
    prefix: Option<String>,
}

impl SideEnv {
    /// Settings from the plain variables only.
    pub fn plain() -> Self {
        Self::default()
    }

    /// Settings where `<prefix>NAME` overrides `NAME` (e.g. prefix `LINEAGE_TO_`).
    pub fn prefixed(prefix: impl Into<String>) -> Self {
        Self {
            prefix: Some(prefix.into()),
        }
    }

    /// `<prefix>NAME` only (unset or empty: `None`).
    pub fn own(&self, name: &str) -> Option<String> {
        let p = self.prefix.as_deref()?;
        std::env::var(format!("{p}{name}"))
            .ok()
            .filter(|v| !v.trim().is_empty())
    }

    /// `<prefix>NAME`, else `NAME` (unset or empty: `None`).
    pub fn var(&self, name: &str) -> Option<String> {
        self.own(name)
            .or_else(|| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    }

    /// Every `<prefix>NAME` whose NAME starts with `family` (`AZURE_`, `GOOGLE_`, `AWS_`),
    /// as (lower-case NAME, value): the form `object_store`'s config keys parse.
    pub(crate) fn overrides(&self, family: &str) -> Vec<(String, String)> {
        let Some(p) = self.prefix.as_deref() else {
            return Vec::new();
        };
        std::env::vars()
            .filter_map(|(k, v)| {
                let name = k.strip_prefix(p)?;
                name.starts_with(family)
                    .then(|| (name.to_ascii_lowercase(), v))
            })
            .collect()
    }
}
