//! The `lineage` binary end to end on a local-disk store.

mod end_to_end;
mod operator_safety;
mod readme_synopsis;
