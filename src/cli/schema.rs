//! `lineage schema`: the contract, for people and for programs.

use serde_json::json;

use crate::base::error::Result;
use crate::cli::common::{out, out_raw, Status};
use crate::schema::contract::{self, arrow_type};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The contract as JSON.
    #[arg(long)]
    json: bool,
    /// Print this registered version (default: the newest).
    #[arg(long, value_name = "VERSION")]
    schema_version: Option<String>,
}

pub(crate) fn run(a: Args) -> Result<Status> {
    let v = match &a.schema_version {
        Some(s) => contract::version(s)?,
        None => contract::newest(),
    };
    let registered: Vec<String> = contract::versions()
        .iter()
        .map(|v| v.version.clone())
        .collect();
    if a.json {
        let fields: Vec<_> = v
            .columns
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
        let doc = json!({
            "schema_version": v.version,
            "registered_versions": registered,
            "partition_keys": contract::PARTITION_KEYS,
            "fields": fields,
        });
        out_raw(&doc.to_string())?;
    } else {
        out(&format!(
            "lineage contract, schema version {} (registered: {})",
            v.version,
            registered.join(", ")
        ))?;
        out(&format!(
            "partition keys: {}",
            contract::PARTITION_KEYS.join(", ")
        ))?;
        for (i, c) in v.columns.iter().enumerate() {
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
