output "store_url" {
  description = "For `lineage --store` (with `--endpoint-url` = var.endpoint)."
  value       = module.archive.store_url
}

output "endpoint" {
  description = "For `lineage --endpoint-url`."
  value       = var.endpoint
}

output "bucket" {
  description = "The archive bucket."
  value       = module.archive.bucket
}

output "kms_key_arn" {
  description = "The archive's KMS key."
  value       = module.archive.kms_key_arn
}

output "policy_arns" {
  description = "Duty policy ARNs."
  value       = module.archive.policy_arns
}

output "role_arns" {
  description = "Duty role ARNs."
  value       = module.archive.role_arns
}

output "bucket_policy_json" {
  description = "The archive's bucket policy."
  value       = module.archive.bucket_policy_json
}

output "access_log_bucket" {
  description = "Where the archive's access logs go."
  value       = module.archive.access_log_bucket
}

output "glue_table" {
  description = "Always null here (Glue is off: LocalStack has none)."
  value       = module.archive.glue_table
}
