//! The report's charts, drawn by `plotters` with its SVG backend, each made accessible:
//! `role="img"`, a `<title>` and a `<desc>` saying what it shows in words, distinct marker
//! shapes beside the colours, and no reference outside itself (the SVG namespace URL is
//! dropped: an SVG inline in HTML needs none).

use chrono::{DateTime, Duration, Utc};
use plotters::coord::ranged1d::SegmentValue;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::base::error::{Error, Result};
use crate::report::model::{Histogram, Timeline, ValueCount};

/// Labels longer than this are cut (the tables beside the charts hold them whole).
const LABEL_CHARS: usize = 40;

const BAR: RGBColor = RGBColor(0x2b, 0x5c, 0x8a);
const SIGNED: RGBColor = RGBColor(0x1b, 0x6e, 0x3a);
const UNSIGNED: RGBColor = RGBColor(0xa3, 0x3b, 0x00);
const WITNESS: RGBColor = RGBColor(0x55, 0x33, 0x99);

fn err<E: std::fmt::Display>(e: E) -> Error {
    Error::internal(format!("drawing a chart: {e}"))
}

fn cut(s: &str) -> String {
    if s.chars().count() <= LABEL_CHARS {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(LABEL_CHARS - 1).collect();
        t.push('…');
        t
    }
}

/// XML text (for the title and description; plotters escapes its own text).
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// plotters' SVG, made an accessible inline image: `role="img"`, `<title>` and `<desc>`
/// referenced by `aria-labelledby`, scaled to its container, no namespace URL.
fn accessible(svg: &str, id: &str, title: &str, desc: &str) -> String {
    let svg = svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    let Some(open_end) = svg.find('>') else {
        return svg;
    };
    let (open, rest) = svg.split_at(open_end);
    format!(
        "{open} role=\"img\" aria-labelledby=\"{id}-t {id}-d\" class=\"chart\"><title id=\"{id}-t\">{}</title><desc id=\"{id}-d\">{}</desc>{}",
        xml(title),
        xml(desc),
        &rest[1..]
    )
}

/// A horizontal bar chart of counts per value (rejection reasons).
pub(crate) fn bars(id: &str, title: &str, items: &[ValueCount]) -> Result<String> {
    let n = items.len().max(1);
    let max = items.iter().map(|v| v.count).max().unwrap_or(1).max(1);
    let height = 60 + 26 * n as u32;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (720, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(260)
            .build_cartesian_2d(0u64..max + max / 10 + 1, (0..n).into_segmented())
            .map_err(err)?;
        // Row 0 at the bottom: the first (largest) value goes on top.
        let label = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => (n - 1)
                .checked_sub(*i)
                .and_then(|k| items.get(k))
                .map(|x| cut(&x.value))
                .unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(WHITE)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 14))
            .y_labels(n)
            .y_label_formatter(&label)
            .x_desc("events")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(items.iter().enumerate().map(|(i, v)| {
                let mut r = Rectangle::new(
                    [
                        (0, SegmentValue::Exact(n - 1 - i)),
                        (v.count, SegmentValue::Exact(n - i)),
                    ],
                    BAR.filled(),
                );
                r.set_margin(3, 3, 0, 0);
                r
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    let desc = items
        .iter()
        .map(|v| format!("{}: {}", v.value, v.count))
        .collect::<Vec<_>>()
        .join("; ");
    Ok(accessible(&buf, id, title, &format!("Bar chart. {desc}")))
}

/// An `accuracy_m` histogram (one bar per decade bin).
pub(crate) fn histogram(id: &str, h: &Histogram) -> Result<String> {
    let buf = draw_histogram(h)?;
    let desc = h
        .bins
        .iter()
        .map(|b| format!("{}: {}", b.label, b.count))
        .collect::<Vec<_>>()
        .join("; ");
    Ok(accessible(
        &buf,
        id,
        &format!("accuracy_m of the events with target CRS {}", h.target_crs),
        &format!(
            "Histogram, one bar per decade of metres. {desc}; {} events without a value.",
            h.without_value
        ),
    ))
}

/// plotters' SVG of an `accuracy_m` histogram.
fn draw_histogram(h: &Histogram) -> Result<String> {
    let n = h.bins.len().max(1);
    let max = h.bins.iter().map(|b| b.count).max().unwrap_or(1).max(1);
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (720, 260)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d((0..n).into_segmented(), 0u64..max + max / 10 + 1)
            .map_err(err)?;
        let label = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => {
                h.bins.get(*i).map(|b| b.label.clone()).unwrap_or_default()
            }
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(WHITE)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .x_labels(n)
            .x_label_formatter(&label)
            .x_desc("accuracy_m")
            .y_desc("events")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(h.bins.iter().enumerate().map(|(i, b)| {
                let mut r = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0),
                        (SegmentValue::Exact(i + 1), b.count),
                    ],
                    BAR.filled(),
                );
                r.set_margin(0, 0, 4, 4);
                r
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

fn parse(t: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The time axis of the timeline: hours since the first seal.
struct TimeAxis {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    /// Hours from the first seal to the last; at least a minute.
    span_h: f64,
}

impl TimeAxis {
    /// The axis over `times`; `None` when no time parses.
    fn over(times: &[Option<DateTime<Utc>>]) -> Option<Self> {
        let start = times.iter().flatten().min().copied()?;
        let end = times.iter().flatten().max().copied().unwrap_or(start);
        Some(TimeAxis {
            start,
            end,
            span_h: hours(end - start).max(1.0 / 60.0),
        })
    }

    /// Where `t` is on the axis (the start when it did not parse).
    fn x(&self, t: Option<DateTime<Utc>>) -> f64 {
        t.map_or(0.0, |t| hours(t - self.start))
    }

    /// The label at `x`: days, or down to seconds for a short span.
    fn label(&self, x: f64) -> String {
        let fmt = if self.span_h > 48.0 {
            "%Y-%m-%d"
        } else if self.span_h > 2.0 {
            "%m-%d %H:%M"
        } else {
            "%H:%M:%S"
        };
        (self.start + Duration::milliseconds((x * 3_600_000.0) as i64))
            .format(fmt)
            .to_string()
    }
}

fn hours(d: Duration) -> f64 {
    d.num_milliseconds() as f64 / 3_600_000.0
}

/// The seal chain over time: commits per seal (or group of seals), a filled circle for a
/// signed seal and a cross for an unsigned one, a triangle above a witnessed one.
pub(crate) fn timeline(id: &str, t: &Timeline) -> Result<Option<String>> {
    let times: Vec<Option<DateTime<Utc>>> = t.points.iter().map(|p| parse(&p.sealed_utc)).collect();
    let Some(axis) = TimeAxis::over(&times) else {
        return Ok(None);
    };
    let buf = draw_timeline(t, &times, &axis)?;
    let desc = format!(
        "{} seals from {} to {}: {} signed, {} unsigned{}. Each mark is {}; its height the commits it added.",
        t.seals,
        axis.start.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        axis.end.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        t.signed,
        t.seals - t.signed,
        t.witnessed
            .map(|w| format!(", {w} witnessed"))
            .unwrap_or_default(),
        if t.grouped { "a group of consecutive seals" } else { "one seal" }
    );
    Ok(Some(accessible(
        &buf,
        id,
        "The seal chain over time",
        &desc,
    )))
}

/// The timeline's chart: axes, marks and legend.
type TimelineChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// plotters' SVG of the timeline; `times`: each point's time.
fn draw_timeline(t: &Timeline, times: &[Option<DateTime<Utc>>], axis: &TimeAxis) -> Result<String> {
    let ymax = t.points.iter().map(|p| p.commits).max().unwrap_or(1).max(1) as f64;
    let pad = axis.span_h * 0.04;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (900, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            // Headroom above the marks for the legend.
            .build_cartesian_2d(-pad..axis.span_h + pad, 0.0..ymax * 1.6)
            .map_err(err)?;
        let xlabel = |x: &f64| axis.label(*x);
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .x_labels(6)
            .x_label_formatter(&xlabel)
            .x_desc("sealed (UTC)")
            .y_desc(if t.grouped {
                "commits per group of seals"
            } else {
                "commits per seal"
            })
            .draw()
            .map_err(err)?;
        let at = |i: usize| (axis.x(times[i]), t.points[i].commits as f64);
        draw_seal_marks(&mut chart, t, at, ymax)?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// The timeline's marks, each series with its legend entry: signed and unsigned points at
/// `at(i)`, witnessed ones (when a witness was checked) a little above.
fn draw_seal_marks(
    chart: &mut TimelineChart<'_, '_>,
    t: &Timeline,
    at: impl Fn(usize) -> (f64, f64),
    ymax: f64,
) -> Result<()> {
    let seals_of = |i: &usize| t.points[*i].last_seq - t.points[*i].first_seq + 1;
    let signed: Vec<(f64, f64)> = (0..t.points.len())
        .filter(|i| t.points[*i].signed == seals_of(i))
        .map(&at)
        .collect();
    let unsigned: Vec<(f64, f64)> = (0..t.points.len())
        .filter(|i| t.points[*i].signed < seals_of(i))
        .map(&at)
        .collect();
    let witnessed: Vec<(f64, f64)> = (0..t.points.len())
        .filter(|i| t.points[*i].witnessed > 0)
        .map(&at)
        .map(|(x, y)| (x, y + ymax * 0.1))
        .collect();
    chart
        .draw_series(signed.iter().map(|p| Circle::new(*p, 5, SIGNED.filled())))
        .map_err(err)?
        .label("signed")
        .legend(|(x, y)| Circle::new((x, y), 5, SIGNED.filled()));
    chart
        .draw_series(
            unsigned
                .iter()
                .map(|p| Cross::new(*p, 5, UNSIGNED.stroke_width(2))),
        )
        .map_err(err)?
        .label("unsigned")
        .legend(|(x, y)| Cross::new((x, y), 5, UNSIGNED.stroke_width(2)));
    if t.witnessed.is_some() {
        chart
            .draw_series(
                witnessed
                    .iter()
                    .map(|p| TriangleMarker::new(*p, 6, WITNESS.filled())),
            )
            .map_err(err)?
            .label("witnessed")
            .legend(|(x, y)| TriangleMarker::new((x, y), 6, WITNESS.filled()));
    }
    Ok(())
}
