//! What a backend with directories says of a directory's change: its stamp
//! ([`crate::publish::AtomicPublisher::dir_stamps`]). Object stores have none.

/// What a local directory's change looks like from outside: its inode and its change
/// time (`st_ctime`, nanoseconds since the epoch). See [`crate::publish::AtomicPublisher::dir_stamps`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DirStamp {
    /// The directory's inode number.
    pub inode: u64,
    /// Its change time, in nanoseconds since the Unix epoch.
    pub changed_ns: i128,
}

impl DirStamp {
    /// `<inode>:<changed_ns>`, as a seal records it.
    pub fn to_text(self) -> String {
        format!("{}:{}", self.inode, self.changed_ns)
    }

    /// The stamp [`to_text`](Self::to_text) wrote; `None` for anything else.
    pub fn from_text(s: &str) -> Option<Self> {
        let (inode, changed) = s.split_once(':')?;
        Some(Self {
            inode: inode.parse().ok()?,
            changed_ns: changed.parse().ok()?,
        })
    }
}
