output "store_url" {
  description = "For `lineage --store` (or LINEAGE_STORE)."
  value       = module.archive.store_url
}

output "replica_store_url" {
  description = "For `lineage verify --store` against the replica."
  value       = module.archive.replica_store_url
}

output "policy_arns" {
  description = "Duty policy ARNs (attach them to the roles that run lineage)."
  value       = module.archive.policy_arns
}

output "role_arns" {
  description = "Duty roles made here."
  value       = module.archive.role_arns
}

output "glue_table" {
  description = "database.table for Athena."
  value       = module.archive.glue_table
}

output "kms_key_arn" {
  description = "The archive's KMS key."
  value       = module.archive.kms_key_arn
}

output "replica_kms_key_arn" {
  description = "The replica's KMS key."
  value       = module.archive.replica_kms_key_arn
}

output "region" {
  description = "The archive's region (AWS_REGION for lineage)."
  value       = var.region
}

output "replica_region" {
  description = "The replica's region (AWS_REGION for `lineage verify` of the replica)."
  value       = var.replica_region
}

output "glue_iceberg_table" {
  description = "The Glue Iceberg table at var.iceberg_metadata_location (null without one)."
  value       = module.archive.glue_iceberg_table
}
