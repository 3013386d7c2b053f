//! Library logs to stderr, filtered by `LINEAGE_LOG` as for the CLI: a level (`error`,
//! `warn` (the default), `info`, `debug`, `trace`, `off`), optionally per target
//! (`lineage_store=debug,warn`: the most specific target prefix wins). A small
//! `tracing` subscriber of our own, so the extension does not build tracing-subscriber.

use std::fmt::Write as _;
use std::io::Write as _;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// The filter `LINEAGE_LOG` describes: (target prefix, most verbose level) pairs, the
/// longest prefix first, and the default for every other target.
#[derive(Debug)]
struct Filter {
    targets: Vec<(String, Option<Level>)>,
    default: Option<Level>,
}

fn level(s: &str) -> Option<Option<Level>> {
    Some(match s.trim().to_ascii_lowercase().as_str() {
        "off" => None,
        "error" => Some(Level::ERROR),
        "warn" => Some(Level::WARN),
        "info" => Some(Level::INFO),
        "debug" => Some(Level::DEBUG),
        "trace" => Some(Level::TRACE),
        _ => return None,
    })
}

impl Filter {
    fn parse(spec: &str) -> Self {
        let mut f = Filter {
            targets: Vec::new(),
            default: Some(Level::WARN),
        };
        for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
            match part.split_once('=') {
                Some((target, l)) => {
                    if let Some(l) = level(l) {
                        f.targets.push((target.trim().to_string(), l));
                    }
                }
                None => {
                    if let Some(l) = level(part) {
                        f.default = l;
                    }
                }
            }
        }
        f.targets.sort_by_key(|(t, _)| std::cmp::Reverse(t.len()));
        f
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        let max = self
            .targets
            .iter()
            .find(|(t, _)| meta.target().starts_with(t.as_str()))
            .map_or(self.default, |(_, l)| *l);
        max.is_some_and(|max| *meta.level() <= max)
    }
}

/// Writes each enabled event as one line: `LEVEL target: message field=value ...`.
#[derive(Debug)]
struct Stderr {
    filter: Filter,
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl Subscriber for Stderr {
    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        self.filter.enabled(meta)
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut line = Line(format!("{:>5} {}:", meta.level(), meta.target()));
        event.record(&mut line);
        line.0.push('\n');
        let _ = std::io::stderr().lock().write_all(line.0.as_bytes());
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Install the stderr logger (once per process; later calls do nothing).
pub(crate) fn init() {
    let spec = std::env::var("LINEAGE_LOG").unwrap_or_default();
    let _ = tracing::subscriber::set_global_default(Stderr {
        filter: Filter::parse(&spec),
    });
}
