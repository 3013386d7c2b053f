//! Publishers and their backends: one conformance suite for all, local disk (listing,
//! reads, full disks, read-only directories), object stores through the CLI and the
//! emulators, lost responses, network faults and the object-store wiring.

mod cli_object_stores;
mod conformance;
mod local_disk_faults;
mod lost_responses;
mod network_faults;
mod object_store_wiring;
mod paged_listing;
mod posix_listing;
mod posix_reads;
mod s3_checksums;
mod seaweedfs;
