//! Issue 26: what a writer with access to a local-disk store (or anyone who can create files
//! there) can plant, and that nothing it plants hides from `verify` or makes a command read,
//! write or delete outside the store.

mod adoption;
mod binary_input;
mod hostile_pointers;
mod input_sizes;
mod keys;
mod lying_footers;
mod memory;
mod output;
mod planted_parts;
mod planted_since;
mod sizes;
mod symlinks;
mod verify_lows;
