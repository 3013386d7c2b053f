//! One replication pass (see [`super`] for the order and the checks).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use crate::audit::chain::Chain;
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::format::claim::{Claim, CLAIM_FORMAT};
use crate::format::keys;
use crate::format::pointer::check_pointer;
use crate::format::pointer::Pointer;
use crate::parts::read::stream_sha256;
use crate::publish::checked::{create_or_read_back, Landed, Published};
use crate::publish::AtomicPublisher;
use crate::replicate::kinds::Kind;
use crate::replicate::types::{Progress, ReplicateOptions};

mod pass;
mod seals;

/// Copies one store into another, pass after pass. Between passes it remembers which
/// keys are settled (present at both sides with the same bytes), so a later pass reads
/// only what is new (every pass still lists both stores and walks the source chain).
#[derive(Debug)]
pub struct Replicator {
    src: Arc<dyn AtomicPublisher>,
    dst: Arc<dyn AtomicPublisher>,
    opts: ReplicateOptions,
    /// Settled key → sha256 of its bytes (pointers' digests are needed for seals).
    settled: HashMap<String, String>,
    /// Objects created by this replicator so far (for the hook).
    created: Arc<AtomicU64>,
}

impl Replicator {
    /// A replicator from `src` to `dst`.
    pub fn new(
        src: Arc<dyn AtomicPublisher>,
        dst: Arc<dyn AtomicPublisher>,
        opts: ReplicateOptions,
    ) -> Self {
        Self {
            src,
            dst,
            opts,
            settled: HashMap::new(),
            created: Arc::new(AtomicU64::new(0)),
        }
    }
}

/// What happened to one object.
#[derive(Debug)]
enum Done {
    /// Created at the destination, with this many bytes.
    Copied(u64),
    /// Already at the destination with the same bytes.
    Present,
    /// Not copied: the source object, or one it names, failed a check.
    Refused(String),
    /// Not copied, not a problem.
    Skipped(String),
    /// The destination holds other bytes.
    Conflict {
        source: Option<String>,
        destination: String,
    },
}

/// One object handled by the pass.
#[derive(Debug)]
struct Handled {
    pub(super) key: String,
    pub(super) kind: Kind,
    done: Done,
    /// sha256 of the bytes now at both sides (for objects that are settled).
    digest: Option<String>,
}

impl Handled {
    fn new(key: impl Into<String>, kind: Kind, done: Done, digest: Option<String>) -> Self {
        Self {
            key: key.into(),
            kind,
            done,
            digest,
        }
    }

    pub(super) fn settled(&self) -> bool {
        matches!(self.done, Done::Copied(_) | Done::Present)
    }
}

/// What every unit of a pass reads.
struct Ctx<'a> {
    src: &'a dyn AtomicPublisher,
    dst: &'a dyn AtomicPublisher,
    pub(super) chain: &'a Chain,
    /// The destination's listing at the start of the pass: key → size.
    pub(super) dst_sizes: HashMap<String, u64>,
    progress: Arc<Progress>,
    pub(super) r: &'a Replicator,
}

impl Ctx<'_> {
    fn stopping(&self) -> bool {
        self.r.opts.stop.is_requested()
    }

    /// Count a created object and run the hook.
    async fn created(&self, key: &str) {
        let n = self.r.created.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(hook) = &self.r.opts.on_published {
            hook(n, key.to_string()).await;
        }
    }

    /// Create `key` at the destination (read back after an unclear answer).
    async fn publish(&self, key: &str, bytes: Bytes, want: &str) -> Result<Done> {
        let len = bytes.len() as u64;
        let landed = create_or_read_back(self.dst, key, bytes, |have| {
            let got = sha256_hex(have);
            if got == want {
                return Ok(());
            }
            Err(Mismatch {
                why: format!("destination sha256 {got}, source sha256 {want}"),
                destination: Some(got),
            })
        })
        .await?;
        match landed {
            Landed::Ours(kept) if kept.published == Published::Created => {
                self.created(key).await;
                Ok(Done::Copied(len))
            }
            Landed::Ours(_) => Ok(Done::Present),
            Landed::Theirs(Mismatch {
                destination: Some(t),
                ..
            }) => Ok(Done::Conflict {
                source: Some(want.to_string()),
                destination: t,
            }),
            Landed::Theirs(m) => Err(Error::Conflict {
                key: key.to_string(),
                message: m.why,
            }),
        }
    }

    /// A small object (pointer, claim, seal, other): compared when the destination lists
    /// it, published otherwise.
    async fn put_small(&self, key: &str, bytes: Bytes, digest: &str) -> Result<Done> {
        if self.dst_sizes.contains_key(key) {
            if let Some(have) = self.dst.get(key).await? {
                let theirs = sha256_hex(&have);
                return Ok(if theirs == digest {
                    Done::Present
                } else {
                    Done::Conflict {
                        source: Some(digest.to_string()),
                        destination: theirs,
                    }
                });
            }
        }
        self.publish(key, bytes, digest).await
    }

    /// Make the pointer's part present at the destination: hashed when it is there
    /// already (unless `trust_size`: its pointer is there too, identical), else read from
    /// the source, checked against the pointer, and published.
    async fn ensure_part(&self, ptr_key: &str, p: &Pointer, trust_size: bool) -> Result<Done> {
        let key = p.part_path.as_str();
        if let Some(&size) = self.dst_sizes.get(key) {
            if trust_size && size == p.size_bytes {
                return Ok(Done::Present);
            }
            let theirs = stream_sha256(self.dst, key, size, &|_| {}).await?;
            return Ok(if theirs == p.sha256 && size == p.size_bytes {
                Done::Present
            } else {
                Done::Conflict {
                    source: Some(p.sha256.clone()),
                    destination: theirs,
                }
            });
        }
        // One create-only PUT per part, so the part is read whole (one per worker).
        let Some(bytes) = self.src.get(key).await? else {
            return Ok(Done::Refused(format!(
                "missing at the source, though its pointer {ptr_key} records it"
            )));
        };
        if bytes.len() as u64 != p.size_bytes {
            return Ok(Done::Refused(format!(
                "{} bytes at the source, but its pointer {ptr_key} records {}: corrupt at the source, not copied",
                bytes.len(),
                p.size_bytes
            )));
        }
        let got = sha256_hex(&bytes);
        if got != p.sha256 {
            return Ok(Done::Refused(format!(
                "sha256 {got} at the source, but its pointer {ptr_key} records {}: corrupt at the source, not copied",
                p.sha256
            )));
        }
        let done = self.publish(key, bytes, &p.sha256).await?;
        if let Done::Copied(n) = done {
            self.progress.bytes_done.fetch_add(n, Ordering::Relaxed);
        }
        Ok(done)
    }

    /// A pointer's bytes at the source, or what is done instead: refused by its size
    /// before it is read (no pointer is larger than `MAX_POINTER_BYTES`), skipped when
    /// it is gone.
    async fn source_pointer(&self, key: &str) -> Result<std::result::Result<Bytes, Done>> {
        let max = crate::format::pointer::MAX_POINTER_BYTES as u64;
        match self.src.get_at_most(key, max).await {
            Err(Error::TooLarge { size, .. }) => Ok(Err(Done::Refused(format!(
                "{size} bytes; a pointer is at most {max} (not read); not copied (nor its part)"
            )))),
            Err(e) => Err(e),
            Ok(Some(bytes)) => Ok(Ok(bytes)),
            Ok(None) => Ok(Err(Done::Skipped(
                "removed from the source since it was listed".to_string(),
            ))),
        }
    }

    /// One commit: its pointer checked, then its part, then the pointer.
    async fn commit(&self, key: String, run_id: String, commit_id: String) -> Result<Vec<Handled>> {
        let kind = Kind::Pointer {
            run_id: run_id.clone(),
            commit_id: commit_id.clone(),
        };
        let bytes = match self.source_pointer(&key).await? {
            Ok(bytes) => bytes,
            Err(done) => return Ok(vec![Handled::new(key, kind, done, None)]),
        };
        let digest = sha256_hex(&bytes);
        if let Some(&i) = self.chain.by_key.get(&key) {
            let leaf = &self.chain.leaves[i];
            if leaf.digest != digest {
                let why = format!(
                    "sha256 {digest} at the source, but seal {} sealed {}: edited after it was sealed, not copied (nor its part)",
                    leaf.seq, leaf.digest
                );
                return Ok(vec![Handled::new(key, kind, Done::Refused(why), None)]);
            }
        }
        let p = match check_pointer(&key, &bytes, &run_id, &commit_id) {
            Ok(p) => p,
            Err(e) => {
                let why = format!("{e}; not copied (nor its part)");
                return Ok(vec![Handled::new(key, kind, Done::Refused(why), None)]);
            }
        };
        let at_dst = if self.dst_sizes.contains_key(&key) {
            self.dst.get(&key).await?
        } else {
            None
        };
        if let Some(have) = &at_dst {
            let theirs = sha256_hex(have);
            if theirs != digest {
                let done = Done::Conflict {
                    source: Some(digest),
                    destination: theirs,
                };
                return Ok(vec![Handled::new(key, kind, done, None)]);
            }
        }
        let part = self.ensure_part(&key, &p, at_dst.is_some()).await?;
        let part_ok = matches!(part, Done::Copied(_) | Done::Present);
        let mut out = vec![Handled::new(
            p.part_path.clone(),
            Kind::Part,
            part,
            Some(p.sha256.clone()),
        )];
        let pointer = if !part_ok {
            Done::Refused(format!("its part {} was not copied", p.part_path))
        } else if at_dst.is_some() {
            Done::Present
        } else {
            self.put_small(&key, bytes, &digest).await?
        };
        out.push(Handled::new(key, kind, pointer, Some(digest)));
        Ok(out)
    }

    /// One claim, or one object of a kind this version does not know.
    async fn small(&self, key: String, kind: Kind) -> Result<Handled> {
        let Some(bytes) = self.src.get(&key).await? else {
            let why = "removed from the source since it was listed".to_string();
            return Ok(Handled::new(key, kind, Done::Skipped(why), None));
        };
        if kind == Kind::Claim {
            if let Some(why) = claim_problem(&key, &bytes) {
                return Ok(Handled::new(key, kind, Done::Refused(why), None));
            }
        }
        let digest = sha256_hex(&bytes);
        let done = self.put_small(&key, bytes, &digest).await?;
        Ok(Handled::new(key, kind, done, Some(digest)))
    }
}

/// Why a commit-key claim is not one lineage-store wrote under this key, if it is not.
fn claim_problem(key: &str, bytes: &[u8]) -> Option<String> {
    let claim: Claim = match serde_json::from_slice(bytes) {
        Ok(c) => c,
        Err(e) => return Some(format!("not a commit-key claim: {e}")),
    };
    if claim.format != CLAIM_FORMAT {
        return Some(format!("unknown claim format {:?}", claim.format));
    }
    let expect = keys::commit_key_claim_key(&claim.commit_key);
    (expect != key).then(|| {
        format!(
            "claims commit key {:?}, which belongs at {expect}",
            claim.commit_key
        )
    })
}

/// Why a destination object is not the source's: the message, and the destination's
/// sha256 when it was read.
struct Mismatch {
    why: String,
    destination: Option<String>,
}

impl From<String> for Mismatch {
    fn from(why: String) -> Self {
        Mismatch {
            why,
            destination: None,
        }
    }
}
