//! History that scales: the structures that make `log`, `verify --since-seal`, `seal` and
//! `prove` cost O(commits since the last seal + log n) requests, not O(all history).
//!
//! Modelled on tiled transparency logs (C2SP tlog-tiles / static-ct-api, Tessera) and on
//! Delta Lake's checkpoints, within lineage-store's one rule: every object is created once
//! and never rewritten. Four kinds of objects are added beside the pointers and seals
//! (keys in [`crate::format::keys`]):
//!
//! | object | written by | what it is for |
//! |---|---|---|
//! | index entry `_lineage/index/<day>/T<time>Z.<id>.run_id=<r>` (empty) | the writer, after each pointer | listing the commits made since a time across every run ([`index`]) |
//! | head marker `_lineage/heads/<2^64-1-seq>-<seq>` (empty) | the sealer, last | finding the newest complete seal in one listing page ([`head`]) |
//! | hash tile `_lineage/tiles/<L>/<N>[.p/<W>]` | the sealer | proofs from O(log n) tiles ([`tiles`]) |
//! | leaf locator `_lineage/leaves/<hh>/<id>.<leaf index>.run_id=<r>` (empty) | the sealer | a commit's place in the tree, by commit id ([`complete`]) |
//! | C2SP checkpoint `_lineage/tlog/checkpoints/<seq>` | the sealer, from the signed seal | checking a seal head with any tlog tool ([`checkpoint`]) |
//! | C2SP tiles `_lineage/tlog/tile/<L>/<N>[.p/<W>]`, entry bundles `_lineage/tlog/tile/entries/<N>[.p/<W>]` | the sealer | inclusion and consistency proofs with any tlog client ([`tlog`]) |
//!
//! and seals of format `lineage-seal/2` carry the tree's frontier ([`frontier`]), a
//! watermark and the entries sealed ahead of it ([`sealer`]). Stores written before keep
//! verifying as they are; the first seal of the new format adds the structures for their
//! whole history.

pub mod checkpoint;
pub mod complete;
pub mod cosignature;
pub(crate) mod delta;
pub(crate) mod delta_checkpoint;
pub(crate) mod delta_restore;
pub mod frontier;
pub(crate) mod head;
pub(crate) mod iceberg;
pub(crate) mod identity;
pub mod index;
pub mod merkle;
pub(crate) mod pointers;
pub mod seal;
pub(crate) mod sealer;
pub mod signing;
pub mod tiles;
pub(crate) mod tlog;
pub(crate) mod window;
