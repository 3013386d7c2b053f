//! Exports of a store's events.

mod openlineage;
