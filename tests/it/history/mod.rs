//! The history structures (index, head markers, tiles, `lineage-seal/2`): sealing from the
//! index, `--since-seal`, shards, stores written before them, tampering and races.

mod burst;
mod chained;
mod cli;
mod legacy;
mod legacy_layout;
mod listing_order;
mod plants;
mod races;
mod requests;
mod seal;
mod shard;
mod shard_platform;
mod stamps;
mod tamper;
mod tiles;
