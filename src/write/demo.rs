//! Realistic sample events for `lineage demo` and tests: several runs and target CRSs
//! (in several spellings, to show canonicalisation), a few percent rejections with
//! reasons, and null accuracy where no coordinate was produced. Deterministic per seed.

use arrow_array::RecordBatch;

use crate::base::error::Result;
use crate::base::rng::Rng;
use crate::schema::events::{EventBuilder, EventRow};

const TARGETS: [&str; 5] = [
    "EPSG:4326",
    "urn:ogc:def:crs:EPSG::3857",
    "epsg:25832",
    "EPSG::32633",
    "http://www.opengis.net/def/crs/EPSG/0/27700",
];
const TARGET_W: [f64; 5] = [0.35, 0.25, 0.15, 0.15, 0.10];
const SOURCES: [&str; 6] = [
    "EPSG:4258",
    "EPSG:31467",
    "EPSG:2056",
    "EPSG:28992",
    "EPSG:3035",
    "EPSG:4269",
];
const SOURCE_W: [f64; 6] = [0.3, 0.2, 0.15, 0.15, 0.1, 0.1];
const LAYERS: [&str; 4] = ["buildings", "parcels", "roads", "hydrography"];
const STAGES: [(&str, &str); 3] = [
    ("reproject", "crs_transform"),
    ("validate", "accuracy_check"),
    ("normalize", "axis_order_normalize"),
];
const STAGE_W: [f64; 3] = [0.8, 0.15, 0.05];
const REASONS: [&str; 4] = [
    "no_transform_path",
    "outside_area_of_use",
    "accuracy_exceeds_tolerance",
    "invalid_geometry",
];
const STRATEGY_M: [f64; 4] = [0.02, 0.5, 1.0, 5.0];

/// `rows` events over `runs` runs, deterministic for a seed.
pub fn generate(rows: usize, runs: usize, seed: u64) -> Result<Vec<RecordBatch>> {
    let mut rng = Rng::new(seed);
    let runs = runs.max(1);
    let mut out = Vec::new();
    let mut b = EventBuilder::new();
    let base_us: i64 = 1_783_922_400_000_000; // 2026-07-13T06:00:00Z
    for r in 0..runs {
        let n = rows / runs + usize::from(r < rows % runs);
        let (run_id, tool, tag) = run_labels(r, &mut rng);
        let mut t = base_us + r as i64 * 86_400_000_000;
        for i in 0..n {
            t += 1 + (rng.unit() * 800.0) as i64;
            let (stage, event_type) = STAGES[rng.pick(&STAGE_W)];
            let (strategy, outcome, reason, acc) = outcome(&mut rng);
            let (event_id, feature_id) = ids(&mut rng);
            b.push(&EventRow {
                event_id: Some(&event_id),
                run_id: Some(&run_id),
                sequence: Some(i as i64 + 1),
                event_time_us: Some(t),
                stage: Some(stage),
                event_type: Some(event_type),
                feature_id: Some(&feature_id),
                source_crs: Some(SOURCES[rng.pick(&SOURCE_W)]),
                target_crs: Some(TARGETS[rng.pick(&TARGET_W)]),
                outcome: Some(outcome),
                strategy_index: strategy,
                accuracy_m: acc,
                rejection_reason: reason,
                tool_version: Some(&tool),
                audit_tag: Some(&tag),
                ..EventRow::default()
            });
            if b.len() >= crate::schema::events::BUILD_CHUNK_ROWS {
                out.push(b.finish()?);
            }
        }
    }
    if !b.is_empty() {
        out.push(b.finish()?);
    }
    Ok(out)
}

/// Run `r`'s id, tool version and audit tag.
fn run_labels(r: usize, rng: &mut Rng) -> (String, String, String) {
    let run_id = format!(
        "run-2026-07-{:02}-{:06x}",
        13 + r,
        rng.next_u64() & 0xff_ffff
    );
    let tool = format!("geostd/2.4.{r}");
    let tag = format!(
        "{}:2026Q3:r{r:02}",
        if r.is_multiple_of(2) {
            "iso19115-li"
        } else {
            "inspire-tg"
        }
    );
    (run_id, tool, tag)
}

/// One event's strategy, outcome, rejection reason and accuracy: a few percent rejected.
fn outcome(rng: &mut Rng) -> (Option<i32>, &'static str, Option<&'static str>, Option<f64>) {
    let mut strategy = Some(rng.pick(&[0.7, 0.2, 0.07, 0.03]) as i32);
    let (outcome, reason, acc) = if rng.unit() < 0.03 {
        let reason = REASONS[(rng.next_u64() % 4) as usize];
        let acc = match reason {
            "no_transform_path" => {
                strategy = None;
                None
            }
            "accuracy_exceeds_tolerance" => Some(10.0 + rng.unit() * 240.0),
            _ => None,
        };
        ("rejected", Some(reason), acc)
    } else {
        let base = STRATEGY_M[strategy.unwrap_or(0) as usize];
        ("transformed", None, Some(base * (0.5 + rng.unit())))
    };
    (strategy, outcome, reason, acc)
}

/// One event's id (a UUID from the generator) and feature id.
fn ids(rng: &mut Rng) -> (String, String) {
    let event_id = uuid::Builder::from_random_bytes(
        rng.next_u64()
            .to_le_bytes()
            .repeat(2)
            .try_into()
            .unwrap_or([0; 16]),
    )
    .into_uuid()
    .to_string();
    let feature_id = format!(
        "{}:{:08}",
        LAYERS[(rng.next_u64() % 4) as usize],
        rng.next_u64() % 100_000_000
    );
    (event_id, feature_id)
}
