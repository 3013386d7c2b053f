//! The report as HTML, Markdown or JSON. HTML and Markdown are rendered by `minijinja`
//! from the templates beside this file: HTML with auto-escaping on (every value from the
//! store is escaped; only the charts, drawn by [`super::chart`], go in as markup),
//! Markdown through the `md` filter (which escapes what Markdown or the HTML it may be
//! turned into would read as markup). In both, every value from the store is first made
//! visible and short ([`super::shown`]: control characters escaped, long values cut). JSON
//! is the [`AuditReport`] itself.

use std::collections::BTreeMap;

use minijinja::{AutoEscape, Environment, Value};

use crate::base::error::{Error, Result};
use crate::report::chart;
use crate::report::model::AuditReport;

/// The report's formats.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportFormat {
    /// One self-contained HTML page: inline CSS and SVG, nothing loaded from elsewhere.
    #[default]
    Html,
    /// Markdown with the same sections (charts as tables).
    Markdown,
    /// The data behind both (docs/report.schema.json).
    Json,
}

impl std::str::FromStr for ReportFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "html" => Ok(Self::Html),
            "md" | "markdown" => Ok(Self::Markdown),
            "json" => Ok(Self::Json),
            _ => Err(Error::usage(format!(
                "report format {s:?}: expected html, md or json"
            ))),
        }
    }
}

const HTML: &str = include_str!("templates/report.html");
const MARKDOWN: &str = include_str!("templates/report.md");

/// Markdown text: characters Markdown (or HTML inside it) reads as markup are escaped, a
/// line break becomes a space (a table cell is one line).
fn md(s: String) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A Markdown code span (object keys, URLs): shown literally, never read as markup; `|`
/// escaped (a table cell), the fence longer than any run of backticks inside.
fn code(s: String) -> String {
    let s = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// An integer with thousands separators.
fn num(v: Value) -> String {
    let Some(n) = v.as_i64() else {
        return v.to_string();
    };
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Bytes in binary units.
fn bytes(v: Value) -> String {
    let Some(n) = v.as_i64() else {
        return v.to_string();
    };
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = n as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < units.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{x:.1} {}", units[u])
    }
}

fn environment() -> Result<Environment<'static>> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|name| {
        if name.ends_with(".html") {
            AutoEscape::Html
        } else {
            AutoEscape::None
        }
    });
    env.add_filter("md", md);
    env.add_filter("code", code);
    env.add_filter("num", num);
    env.add_filter("bytes", bytes);
    let bad = |e: minijinja::Error| Error::internal(format!("report template: {e:#}"));
    env.add_template("report.html", HTML).map_err(bad)?;
    env.add_template("report.md", MARKDOWN).map_err(bad)?;
    Ok(env)
}

/// The charts of the HTML page, by name: `timeline`, `reasons-<i>` and
/// `accuracy-<i>-<j>` (run `i`, histogram `j`).
fn charts(r: &AuditReport) -> Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    if let Some(svg) = chart::timeline("chart-timeline", &r.timeline)? {
        out.insert("timeline".to_string(), Value::from_safe_string(svg));
    }
    for (i, run) in r.runs.items.iter().enumerate() {
        if !run.rejection_reasons.items.is_empty() {
            let id = format!("chart-reasons-{i}");
            let svg = chart::bars(
                &id,
                &format!("Rejected events of run {} by reason", run.run_id),
                &run.rejection_reasons.items,
            )?;
            out.insert(format!("reasons-{i}"), Value::from_safe_string(svg));
        }
        for (j, h) in run.accuracy.iter().enumerate() {
            if h.with_value > 0 {
                let id = format!("chart-accuracy-{i}-{j}");
                out.insert(
                    format!("accuracy-{i}-{j}"),
                    Value::from_safe_string(chart::histogram(&id, h)?),
                );
            }
        }
    }
    Ok(out)
}

/// The report in `format`.
pub fn render(r: &AuditReport, format: ReportFormat) -> Result<String> {
    let bad = |e: minijinja::Error| Error::internal(format!("rendering the report: {e:#}"));
    match format {
        ReportFormat::Json => {
            let mut s = serde_json::to_string_pretty(r).map_err(Error::internal_from)?;
            s.push('\n');
            Ok(s)
        }
        ReportFormat::Html => {
            let r = &crate::report::shown::shown_report(r)?;
            let env = environment()?;
            let ctx = minijinja::context! {
                r => Value::from(minijinja::value::Serde(r)),
                charts => Value::from(charts(r)?),
            };
            env.get_template("report.html")
                .and_then(|t| t.render(ctx))
                .map_err(bad)
        }
        ReportFormat::Markdown => {
            let r = &crate::report::shown::shown_report(r)?;
            let env = environment()?;
            let ctx = minijinja::context! { r => Value::from(minijinja::value::Serde(r)) };
            env.get_template("report.md")
                .and_then(|t| t.render(ctx))
                .map_err(bad)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_text_and_code_spans_are_never_markup() {
        assert_eq!(
            md("<b>a|b</b> *x* _y_ [l](u) `c`\nz".into()),
            "&lt;b&gt;a\\|b&lt;/b&gt; \\*x\\* \\_y\\_ \\[l\\](u) \\`c\\` z"
        );
        assert_eq!(code("run_id=a/b.json".into()), "`run_id=a/b.json`");
        assert_eq!(code("a``b|c".into()), "```a``b\\|c```");
        assert_eq!(code("`x".into()), "`` `x ``");
    }

    #[test]
    fn numbers_and_bytes_read_as_people_write_them() {
        assert_eq!(num(Value::from(1_234_567)), "1,234,567");
        assert_eq!(num(Value::from(999)), "999");
        assert_eq!(bytes(Value::from(512)), "512 B");
        assert_eq!(bytes(Value::from(3 * 1024 * 1024 + 512 * 1024)), "3.5 MiB");
    }
}
