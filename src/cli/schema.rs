//! `lineage schema`: the contract, for people and for programs.

use serde_json::json;

use crate::cli::{out, Status};
use crate::contract::{self, arrow_type, COLUMNS};
use crate::error::Result;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The contract as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(a: Args) -> Result<Status> {
    if a.json {
        let fields: Vec<_> = COLUMNS
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": arrow_type(c.kind).to_string(),
                    "arrow_nullable": true,
                    "required": c.required,
                    "doc": c.doc,
                })
            })
            .collect();
        let v = json!({
            "schema_version": contract::SCHEMA_VERSION,
            "partition_keys": contract::PARTITION_KEYS,
            "fields": fields,
        });
        out(&v.to_string())?;
    } else {
        out(&format!(
            "lineage contract, schema version {}",
            contract::SCHEMA_VERSION
        ))?;
        out(&format!(
            "partition keys: {}",
            contract::PARTITION_KEYS.join(", ")
        ))?;
        for (i, c) in COLUMNS.iter().enumerate() {
            out(&format!(
                "{:>2} {:<17} {:<28} {:<8} {}",
                i + 1,
                c.name,
                arrow_type(c.kind).to_string(),
                if c.required { "required" } else { "nullable" },
                c.doc
            ))?;
        }
    }
    Ok(0)
}
