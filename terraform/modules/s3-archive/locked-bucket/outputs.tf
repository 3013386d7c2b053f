output "bucket" {
  description = "Bucket name."
  value       = aws_s3_bucket.this.id
}

output "bucket_arn" {
  description = "Bucket ARN."
  value       = aws_s3_bucket.this.arn
}

output "kms_key_arn" {
  description = "The KMS key encrypting the bucket (made here or passed in)."
  value       = local.kms_key
}

output "bucket_policy_json" {
  description = "The bucket policy document, as applied."
  value       = data.aws_iam_policy_document.bucket.json
}

output "access_log_bucket" {
  description = "The bucket receiving server access logs, or null."
  value       = local.logging ? aws_s3_bucket_logging.this[0].target_bucket : null
}
