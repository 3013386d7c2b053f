//! The seal a new seal chains onto must verify: a new seal vouches for every seal before
//! it, so chaining onto an edited one would make the edit part of the history the next
//! seal (and its signature) stands for.

use crate::base::error::{Error, Failed, Result};
use crate::format::keys::seal_key;
use crate::history::frontier::Frontier;
use crate::history::head::read_seal;
use crate::history::seal::StoredSeal;
use crate::publish::AtomicPublisher;

/// Refuse (an [`Error::Integrity`] naming the seal, exit 1) to chain onto `newest` when it
/// does not verify: unreadable, a signature that does not check, a frontier that does not
/// give its root, or a link that is not the digest of the seal before it. O(1) reads.
pub(super) async fn check_base(
    store: &dyn AtomicPublisher,
    newest: Option<&StoredSeal>,
) -> Result<()> {
    let Some(n) = newest else {
        return Ok(());
    };
    let refuse = |key: String, why: String| {
        Err(Error::Integrity(vec![Failed::new(
            key,
            format!("{why}: no seal is chained onto a seal that does not verify (`lineage verify` names what is wrong; restore the seal from a replica or backup)"),
        )]))
    };
    let seal = match &n.seal {
        Ok(s) => s,
        Err(m) => return refuse(n.key.clone(), format!("does not parse ({m})")),
    };
    if let Err(e) = seal.check_signature(None) {
        return refuse(
            n.key.clone(),
            format!("its signature does not verify ({e})"),
        );
    }
    if let Some(f) = &seal.frontier {
        let root = Frontier::from_hex(seal.tree_size, f).map(|t| hex::encode(t.root()));
        if !root.is_some_and(|r| r.eq_ignore_ascii_case(&seal.root)) {
            return refuse(
                n.key.clone(),
                "its frontier does not give its root: it was edited".to_string(),
            );
        }
    }
    if n.key_seq > 1 {
        let before = read_seal(store, n.key_seq - 1).await?;
        let digest = before.as_ref().map(|b| b.digest.as_str());
        if digest != seal.prev_sha256.as_deref() {
            let key = seal_key(n.key_seq - 1);
            return refuse(
                key,
                format!(
                    "has sha256 {}, but seal {} records {}: it was edited or removed after seal {} was made",
                    digest.unwrap_or("(none: it is missing)"),
                    n.key_seq,
                    seal.prev_sha256.as_deref().unwrap_or("(none)"),
                    n.key_seq
                ),
            );
        }
    }
    Ok(())
}
