//! `lineage report`: the facts of a clean, a tampered and a hostile store in the JSON and
//! Markdown reports (HTML checked here for escaping and self-containment; in a real
//! browser by tests/python/test_report.py), caps, refusals, and the library's render of a
//! report whose run_id holds markup.

mod anchored;
mod cli;
mod render;
mod unsealed;
