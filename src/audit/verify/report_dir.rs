//! `--report-dir URL`: where the shards of one verification leave their reports and where
//! `verify merge --report-dir URL` finds them. The directory is any store URL (a local
//! directory, `s3://bucket/prefix`, `az://…`, `gs://…`), used only for these reports.
//!
//! A shard report is published create-only under
//! `verify-shard-<i>-of-<n>-plan-<fingerprint>-attempt-<k>.json` (`i`, `n` five digits,
//! `k` three: names sort by shard, then attempt). Batch platforms retry tasks (AWS Batch
//! `attempts`, a Kubernetes Job's `backoffLimit`, Cloud Run's `--max-retries`), and a
//! verify that found problems exits 1, which they count as a failure: a retried shard
//! therefore writes attempt `k+1` beside the earlier one, never over it, and the merge
//! takes each shard's newest attempt. Nothing in the directory is ever replaced or
//! removed.
//!
//! Reading refuses, with a usage error naming what it found: a directory without shard
//! reports, reports of more than one verification (plan fingerprint or shard count differ:
//! give each verification its own directory), and a report whose content disagrees with
//! its name. A missing shard is refused by [`crate::audit::verify::shard::merge`]. Other
//! objects in the directory are left alone and not read.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::audit::findings::{Report, ShardInfo};
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::publish::checked::{create_or_read_back, Landed};
use crate::publish::{list_pages, AtomicPublisher};

const PREFIX: &str = "verify-shard-";
/// Attempts tried beyond the newest one listed, when others land at the same time.
const MAX_RACES: u32 = 64;

/// The name of a shard report without its attempt: `verify-shard-00003-of-00008-plan-<fp>-attempt-`.
fn stem(info: &ShardInfo) -> String {
    format!(
        "{PREFIX}{:05}-of-{:05}-plan-{}-attempt-",
        info.index, info.count, info.plan
    )
}

/// The key of attempt `k` of a shard's report.
pub fn report_key(info: &ShardInfo, attempt: u32) -> String {
    format!("{}{attempt:03}.json", stem(info))
}

/// What a report's name says: (index, count, plan, attempt).
fn parse_key(key: &str) -> Option<(u32, u32, String, u32)> {
    let rest = key.strip_prefix(PREFIX)?.strip_suffix(".json")?;
    let (index, rest) = rest.split_once("-of-")?;
    let (count, rest) = rest.split_once("-plan-")?;
    let (plan, attempt) = rest.rsplit_once("-attempt-")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(index) && digits(count) && digits(attempt)) || plan.is_empty() {
        return None;
    }
    Some((
        index.parse().ok()?,
        count.parse().ok()?,
        plan.to_string(),
        attempt.parse().ok()?,
    ))
}

/// Publish a shard's report (a report of `verify --shard`) into the report directory as
/// the next attempt of that shard; returns its key. Refuses a report that is not a
/// shard's. Never overwrites: an attempt number someone else took meanwhile is skipped.
pub async fn write_shard_report(dir: &dyn AtomicPublisher, report: &Report) -> Result<String> {
    let info = report.shard.as_ref().ok_or_else(|| {
        Error::invalid(
            Param::ReportDir,
            text![
                "holds shard reports: give ",
                Param::Shard,
                " I/N or ",
                Param::Shard,
                " auto (or `lineage verify merge` to read them)"
            ],
        )
    })?;
    let mut bytes = serde_json::to_vec(report).map_err(Error::internal_from)?;
    bytes.push(b'\n');
    let bytes = Bytes::from(bytes);
    let stem = stem(info);
    let newest = list_pages(dir, &stem, "", None)
        .await?
        .iter()
        .filter_map(|o| parse_key(&o.key))
        .map(|(_, _, _, attempt)| attempt)
        .max()
        .unwrap_or(0);
    for attempt in newest + 1..=newest + MAX_RACES {
        let key = report_key(info, attempt);
        let mine = bytes.clone();
        match create_or_read_back(dir, &key, bytes.clone(), |have| {
            if have == mine.as_ref() {
                Ok(())
            } else {
                Err(String::from("another attempt's report"))
            }
        })
        .await?
        {
            Landed::Ours(_) => return Ok(key),
            Landed::Theirs(_) => continue,
        }
    }
    Err(Error::Conflict {
        key: format!("{stem}*"),
        message: format!("{MAX_RACES} attempts of this shard's report were taken while writing it"),
    })
}

/// The newest attempt of every shard report in the directory, checked to be of one
/// verification, in shard order: what [`crate::audit::verify::shard::merge`] takes.
pub async fn read_shard_reports(dir: &dyn AtomicPublisher) -> Result<Vec<Report>> {
    let found = newest_attempts(dir).await?;
    if found.len() > 1 {
        let seen: Vec<String> = found
            .iter()
            .map(|((count, plan), shards)| {
                format!(
                    "plan {plan} of {count} shards ({} report{})",
                    shards.len(),
                    if shards.len() == 1 { "" } else { "s" }
                )
            })
            .collect();
        return Err(Error::usage(text![format!("{}: holds the shard reports of {} verifications ({}): give each verification its own ", dir.describe(), found.len(), seen.join("; ")), Param::ReportDir]));
    }
    let Some(((count, plan), shards)) = found.into_iter().next() else {
        return Err(Error::usage(text![format!(
            "{}: no shard reports (`{PREFIX}*.json`, written by `verify --shard … --report-dir`)",
            dir.describe()
        )]));
    };
    let mut reports = Vec::new();
    for (index, (_, key)) in shards {
        reports.push(read_report(dir, &key, index, count, &plan).await?);
    }
    Ok(reports)
}

/// The shard reports listed in `dir`: (count, plan) -> index -> (newest attempt, key).
async fn newest_attempts(
    dir: &dyn AtomicPublisher,
) -> Result<BTreeMap<(u32, String), BTreeMap<u32, (u32, String)>>> {
    let mut found: BTreeMap<(u32, String), BTreeMap<u32, (u32, String)>> = BTreeMap::new();
    for o in list_pages(dir, PREFIX, "", None).await? {
        let Some((index, count, plan, attempt)) = parse_key(&o.key) else {
            continue;
        };
        let shards = found.entry((count, plan)).or_default();
        let newest = shards.entry(index).or_insert((attempt, o.key.clone()));
        if attempt > newest.0 {
            *newest = (attempt, o.key);
        }
    }
    Ok(found)
}

/// The report under `key`, which must be of shard `index`/`count` of `plan`.
async fn read_report(
    dir: &dyn AtomicPublisher,
    key: &str,
    index: u32,
    count: u32,
    plan: &str,
) -> Result<Report> {
    let bytes = dir.get(key).await?.ok_or_else(|| {
        Error::NotFound(format!(
            "{} {key}: listed, but gone when read",
            dir.describe()
        ))
    })?;
    let report: Report = serde_json::from_slice(&bytes).map_err(|e| {
        Error::usage(text![format!(
            "{} {key}: not a `verify --json` report: {e}",
            dir.describe()
        )])
    })?;
    let named = report
        .shard
        .as_ref()
        .is_some_and(|s| s.index == index && s.count == count && s.plan == plan);
    if !named {
        return Err(Error::usage(format!(
            "{} {key}: the report inside is not of shard {index}/{count} of plan {plan}",
            dir.describe()
        )));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sort_by_shard_then_attempt() {
        let info = ShardInfo {
            index: 3,
            count: 12,
            plan: "0123456789abcdef".into(),
            plan_seal: Some(7),
        };
        let k = report_key(&info, 2);
        assert_eq!(
            k,
            "verify-shard-00003-of-00012-plan-0123456789abcdef-attempt-002.json"
        );
        assert_eq!(parse_key(&k), Some((3, 12, "0123456789abcdef".into(), 2)));
        assert!(report_key(&info, 9) < report_key(&info, 10));
        for bad in [
            "verify-shard-x-of-00012-plan-p-attempt-001.json",
            "verify-shard-00003-of-00012-plan--attempt-001.json",
            "verify-shard-00003-of-00012-plan-p-attempt-001.json.tmp",
            "notes.txt",
        ] {
            assert_eq!(parse_key(bad), None, "{bad}");
        }
    }
}
