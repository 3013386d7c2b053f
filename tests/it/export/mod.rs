//! Exports of a store's events.

mod hostile_endpoint;
mod openlineage;
