# A write-once lineage archive on S3: the bucket (locked-bucket/), the duty policies and
# roles (iam.tf), the optional replica in another region (replication.tf) and the Glue
# table for Athena (glue.tf). See README.md here and docs/deploy.md.

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}
data "aws_region" "current" {}

locals {
  key_prefix = var.store_prefix == "" ? "" : "${var.store_prefix}/"
  store_url  = trimsuffix("s3://${var.bucket_name}/${var.store_prefix}", "/")
  name       = coalesce(var.role_name_prefix, substr(var.bucket_name, 0, 40))
  # Every principal holding a duty: the bucket policies deny them any protection change.
  duty_principal_arns = concat([for r in aws_iam_role.duty : r.arn], var.duty_principal_arns)
}

module "archive" {
  source = "./locked-bucket"
  providers = {
    aws = aws
  }
  bucket_name                                      = var.bucket_name
  store_prefix                                     = var.store_prefix
  object_lock_mode                                 = var.object_lock_mode
  retention_days                                   = var.retention_days
  kms_key_arn                                      = var.kms_key_arn
  kms_key_deletion_window_days                     = var.kms_key_deletion_window_days
  force_destroy                                    = var.force_destroy
  abort_incomplete_multipart_days                  = var.abort_incomplete_multipart_days
  lifecycle_transition_default_minimum_object_size = var.lifecycle_transition_default_minimum_object_size
  access_logging                                   = var.access_logging
  duty_principal_arns                              = local.duty_principal_arns
  tags                                             = var.tags
}

module "replica" {
  source = "./locked-bucket"
  count  = var.replication == null ? 0 : 1
  providers = {
    aws = aws.replica
  }
  bucket_name                                      = var.replication.bucket_name
  store_prefix                                     = var.store_prefix
  object_lock_mode                                 = var.object_lock_mode
  retention_days                                   = coalesce(var.replication.retention_days, var.retention_days)
  kms_key_arn                                      = var.replication.kms_key_arn
  kms_key_deletion_window_days                     = var.kms_key_deletion_window_days
  force_destroy                                    = var.force_destroy
  abort_incomplete_multipart_days                  = var.abort_incomplete_multipart_days
  lifecycle_transition_default_minimum_object_size = var.lifecycle_transition_default_minimum_object_size
  access_logging                                   = var.replication.access_logging
  duty_principal_arns                              = local.duty_principal_arns
  tags                                             = var.tags
}
