output "bucket" {
  description = "The archive bucket."
  value       = module.archive.bucket
}

output "store_url" {
  description = "The store URL for `lineage --store` (or LINEAGE_STORE)."
  value       = local.store_url
}

output "kms_key_arn" {
  description = "The KMS key of the archive."
  value       = module.archive.kms_key_arn
}

output "policy_arns" {
  description = "IAM policy ARNs by duty (writer, sealer, auditor; sweep when sweep_grant)."
  value = merge(
    { for k, p in aws_iam_policy.duty : k => p.arn },
    var.sweep_grant ? { sweep = aws_iam_policy.sweep[0].arn } : {},
  )
}

output "role_arns" {
  description = "ARNs of the duty roles made here, by duty."
  value       = { for k, r in aws_iam_role.duty : k => r.arn }
}

output "bucket_policy_json" {
  description = "The archive's bucket policy document."
  value       = module.archive.bucket_policy_json
}

output "access_log_bucket" {
  description = "The bucket receiving the archive's server access logs, or null."
  value       = module.archive.access_log_bucket
}

output "replica_bucket" {
  description = "The replica bucket, or null."
  value       = try(module.replica[0].bucket, null)
}

output "replica_store_url" {
  description = "The replica's store URL (for `lineage verify --store`), or null."
  value       = local.replicate ? trimsuffix("s3://${module.replica[0].bucket}/${var.store_prefix}", "/") : null
}

output "replica_kms_key_arn" {
  description = "The replica's KMS key, or null."
  value       = try(module.replica[0].kms_key_arn, null)
}

output "glue_database" {
  description = "The Glue database, or null when var.glue.enabled is false."
  value       = try(aws_glue_catalog_database.this[0].name, null)
}

output "glue_table" {
  description = "The Glue table (database.table) for Athena, or null when var.glue.enabled is false."
  value       = local.glue ? "${aws_glue_catalog_database.this[0].name}.${aws_glue_catalog_table.events[0].name}" : null
}

output "glue_iceberg_table" {
  description = "The Glue Iceberg table (database.table) registered at glue.iceberg_metadata_location, or null without one."
  value       = try("${aws_glue_catalog_database.this[0].name}.${aws_glue_catalog_table.iceberg[0].name}", null)
}
