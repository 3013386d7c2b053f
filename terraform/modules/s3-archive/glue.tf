# A Glue table over the store's Hive layout, with partition projection so that Athena (and
# Trino or Spark through the Glue catalog) query it with no crawler and no partition
# registry. The partitions are computed from the query: run_id is injected (a query names
# its run ids: `WHERE run_id = '...'`); target_crs is an enum of known codes, or injected
# too. Only `run_id=.../target_crs=...` locations are ever read, so `_lineage/` (pointers,
# seals) is never part of the table; Athena also skips keys starting with `_` or `.`.

locals {
  glue       = var.glue.enabled
  store_root = "s3://${var.bucket_name}/${local.key_prefix}"
  # The contract's 15 columns (`lineage schema`) less the two partition keys.
  glue_columns = [
    ["event_id", "string"],
    ["sequence", "bigint"],
    ["event_time_utc", "timestamp"],
    ["stage", "string"],
    ["event_type", "string"],
    ["feature_id", "string"],
    ["source_crs", "string"],
    ["outcome", "string"],
    ["strategy_index", "int"],
    ["accuracy_m", "double"],
    ["rejection_reason", "string"],
    ["tool_version", "string"],
    ["audit_tag", "string"],
  ]
  crs_projection = length(var.glue.target_crs_values) == 0 ? {
    "projection.target_crs.type" = "injected"
    } : {
    "projection.target_crs.type"   = "enum"
    "projection.target_crs.values" = join(",", var.glue.target_crs_values)
  }
}

resource "aws_glue_catalog_database" "this" {
  count       = local.glue ? 1 : 0
  name        = coalesce(var.glue.database_name, replace(lower(var.bucket_name), "/[^a-z0-9_]/", "_"))
  description = "lineage-store archive ${local.store_url}"
  tags        = var.tags
}

resource "aws_glue_catalog_table" "events" {
  count         = local.glue ? 1 : 0
  database_name = aws_glue_catalog_database.this[0].name
  name          = var.glue.table_name
  description   = "Lineage events of ${local.store_url} (Parquet, Hive layout, partition projection)"
  table_type    = "EXTERNAL_TABLE"
  parameters = merge({
    "EXTERNAL"                  = "TRUE"
    "classification"            = "parquet"
    "projection.enabled"        = "true"
    "projection.run_id.type"    = "injected"
    "storage.location.template" = "${local.store_root}run_id=$${run_id}/target_crs=$${target_crs}/"
  }, local.crs_projection)

  partition_keys {
    name    = "run_id"
    type    = "string"
    comment = "The pipeline run (Hive partition run_id=...)"
  }
  partition_keys {
    name    = "target_crs"
    type    = "string"
    comment = "Canonical EPSG:<code> (Hive partition target_crs=...)"
  }

  storage_descriptor {
    location      = local.store_root
    input_format  = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"
    output_format = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
    ser_de_info {
      serialization_library = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
    }
    dynamic "columns" {
      for_each = local.glue_columns
      content {
        name = columns.value[0]
        type = columns.value[1]
      }
    }
  }
}

# With glue.iceberg_metadata_location: a second Glue table, the store's Iceberg snapshot
# (`lineage seal --iceberg`) registered by its metadata file, as Athena reads Iceberg
# tables. The metadata location is the catalog's one mutable pointer: the store is
# create-only, so moving the table to a newer seal is a change of this variable (the
# location `lineage files --iceberg` prints after a seal), applied by whoever owns the
# catalog, never by the store's roles. Athena takes the schema and partitions from the
# metadata file; the columns here are what the Glue console shows.
resource "aws_glue_catalog_table" "iceberg" {
  count         = local.glue && var.glue.iceberg_metadata_location != null ? 1 : 0
  database_name = aws_glue_catalog_database.this[0].name
  name          = var.glue.iceberg_table_name
  description   = "Lineage events of ${local.store_url} as sealed (Iceberg, ${var.glue.iceberg_metadata_location})"
  table_type    = "EXTERNAL_TABLE"
  parameters = {
    "table_type"        = "ICEBERG"
    "metadata_location" = var.glue.iceberg_metadata_location
  }

  lifecycle {
    precondition {
      condition     = startswith(var.glue.iceberg_metadata_location, "${local.store_url}/_iceberg/metadata/")
      error_message = "glue.iceberg_metadata_location must be a metadata file of this store (${local.store_url}/_iceberg/metadata/v<N>.metadata.json): Iceberg paths are absolute, so another location's metadata names that location's files."
    }
  }

  storage_descriptor {
    location = local.store_url
    dynamic "columns" {
      for_each = concat([["run_id", "string"]], local.glue_columns, [["target_crs", "string"]])
      content {
        name = columns.value[0]
        type = columns.value[1]
      }
    }
  }
}
