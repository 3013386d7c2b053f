//! CSV: a header naming the 15 fields (in any order), then one event per record. An empty
//! cell is null; `event_time_utc` is RFC 3339.

use crate::base::error::{Error, Result};
use crate::schema::contract::{Kind, COLUMNS};
use crate::schema::events::{EventRow, LineBatcher, SourcedBatch};

use crate::write::input::ndjson::parse_time_us;

pub(super) fn parse(bytes: &[u8]) -> Result<Vec<SourcedBatch>> {
    let mut out = Vec::new();
    read(bytes, &mut |b| {
        out.push(b);
        Ok(())
    })?;
    Ok(out)
}

/// Read CSV from `r`, handing each batch to `emit` as it is cut.
pub(super) fn read<R: std::io::Read>(
    r: R,
    emit: &mut dyn FnMut(SourcedBatch) -> Result<()>,
) -> Result<()> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(r);
    let headers = rdr
        .headers()
        .map_err(|e| csv_err(&e, "the header", None))?
        .clone();
    // Column index in the file for each contract column.
    let mut pos = [usize::MAX; 15];
    for (i, h) in headers.iter().enumerate() {
        let h = h.trim_start_matches('\u{feff}');
        match COLUMNS.iter().position(|c| c.name == h) {
            Some(ci) if pos[ci] != usize::MAX => {
                return Err(Error::record(
                    "line 1",
                    format!(
                        "column `{}` appears twice in the header",
                        crate::schema::rules::cut(h)
                    ),
                ))
            }
            Some(ci) => pos[ci] = i,
            None => {
                return Err(Error::record(
                    "line 1",
                    format!(
                        "column `{}` is not a field of the contract",
                        crate::schema::rules::cut(h)
                    ),
                ))
            }
        }
    }
    if let Some(ci) = pos.iter().position(|&p| p == usize::MAX) {
        return Err(Error::record(
            "line 1",
            format!("the header lacks field `{}`", COLUMNS[ci].name),
        ));
    }
    let mut batcher = LineBatcher::new();
    let mut rec = csv::StringRecord::new();
    loop {
        match rdr.read_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_err(&e, "input", Some(&headers))),
        }
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        let loc = format!("line {line}");
        let cell = |ci: usize| -> Option<&str> { rec.get(pos[ci]).filter(|v| !v.is_empty()) };
        let num_err = |ci: usize, v: &str, what: &str| {
            Error::record(
                format!("{loc}, field `{}`", COLUMNS[ci].name),
                format!("`{}` is not {what}", crate::schema::rules::cut(v)),
            )
        };
        let mut row = EventRow::default();
        for (ci, c) in COLUMNS.iter().enumerate() {
            let v = cell(ci);
            match (c.kind, v) {
                (_, None) => {}
                (Kind::I64, Some(v)) => {
                    row.sequence = Some(
                        v.trim()
                            .parse()
                            .map_err(|_| num_err(ci, v, "a 64-bit integer"))?,
                    )
                }
                (Kind::I32, Some(v)) => {
                    row.strategy_index = Some(
                        v.trim()
                            .parse()
                            .map_err(|_| num_err(ci, v, "a 32-bit integer"))?,
                    )
                }
                (Kind::F64, Some(v)) => {
                    row.accuracy_m = Some(v.trim().parse().map_err(|_| num_err(ci, v, "a number"))?)
                }
                (Kind::TimestampUtc, Some(v)) => {
                    row.event_time_us = Some(
                        parse_time_us(v)
                            .map_err(|m| Error::record(format!("{loc}, field `{}`", c.name), m))?,
                    )
                }
                (Kind::Str, Some(_)) => {}
            }
        }
        row.event_id = cell(0);
        row.run_id = cell(1);
        row.stage = cell(4);
        row.event_type = cell(5);
        row.feature_id = cell(6);
        row.source_crs = cell(7);
        row.target_crs = cell(8);
        row.outcome = cell(9);
        row.rejection_reason = cell(12);
        row.tool_version = cell(13);
        row.audit_tag = cell(14);
        batcher.push(&row, line)?;
        for b in batcher.take_ready() {
            emit(b)?;
        }
    }
    for b in batcher.finish()? {
        emit(b)?;
    }
    Ok(())
}

fn csv_err(e: &csv::Error, what: &str, headers: Option<&csv::StringRecord>) -> Error {
    let loc = e
        .position()
        .map(|p| format!("line {}", p.line()))
        .unwrap_or_else(|| what.to_string());
    let msg = match e.kind() {
        csv::ErrorKind::Utf8 { err, .. } => match headers.and_then(|h| h.get(err.field())) {
            Some(name) => format!("invalid UTF-8 in field `{name}`"),
            None => format!("invalid UTF-8 in field {}", err.field() + 1),
        },
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => {
            format!("has {len} fields, the header has {expected_len}")
        }
        _ => e.to_string(),
    };
    Error::record(loc, msg)
}
