//! `repair --writer-key`: an orphan part is adopted only when a known writer signed it.
//! The check itself is [`crate::parts::writer_sig::check_writer_signature`]; here the
//! part's signed bytes are read and hashed as they are now, so a part whose column chunks
//! changed after it was signed is refused (`bytes changed`), as are unsigned parts, parts
//! signed by another key and footers whose signature does not hold.

use crate::base::digest::Want;
use crate::base::error::Result;
use crate::parts::read::{stream_digests_chunked, PartFacts, HASH_CHUNK_BYTES};
use crate::parts::writer_sig::{check_writer_signature, Verdict, WriterKeys};
use crate::publish::{AtomicPublisher, ObjectInfo};

/// With writer keys given: `Ok(Some(key id))` when part `o` (whose footer says `facts`)
/// is signed by one of them over its bytes as they are, `Err(why)` when it is not;
/// without keys, `Ok(None)` (adoption is not filtered).
pub(super) async fn writer_check(
    store: &dyn AtomicPublisher,
    o: &ObjectInfo,
    facts: &PartFacts,
    keys: &[ed25519_dalek::VerifyingKey],
) -> Result<std::result::Result<Option<String>, String>> {
    if keys.is_empty() {
        return Ok(Ok(None));
    }
    let body = match facts.writer_sig.signed_len() {
        // Never past the object: a shorter object hashes to what it holds.
        Some(n) => Some(
            stream_digests_chunked(
                store,
                &o.key,
                n.min(o.size),
                HASH_CHUNK_BYTES,
                Want::SHA256,
                &|_| {},
            )
            .await?
            .sha256
            .unwrap_or_default(),
        ),
        None => None,
    };
    let verdict = check_writer_signature(
        &facts.signed_footer(),
        body.as_deref(),
        WriterKeys::Only(keys),
    );
    Ok(match verdict {
        Verdict::Verified { key_id } => Ok(Some(key_id)),
        other => Err(format!(
            "{}; only parts signed by one of the writer keys given are adopted",
            other.describe()
        )),
    })
}
