# One write-once bucket: Object Lock with a default retention, versioning, SSE-KMS,
# bucket-owner-enforced ownership, no public access, a create-only bucket policy and a
# lifecycle rule for abandoned multipart uploads. Used twice by s3-archive: for the
# archive and (in another region, through another provider) for its replica.

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

locals {
  # Keys of the store start with this ("" or "prefix/").
  key_prefix = var.store_prefix == "" ? "" : "${var.store_prefix}/"
  create_key = var.kms_key_arn == null
  kms_key    = local.create_key ? aws_kms_key.this[0].arn : var.kms_key_arn
}

resource "aws_kms_key" "this" {
  count                   = local.create_key ? 1 : 0
  description             = "SSE-KMS for the lineage archive bucket ${var.bucket_name}"
  enable_key_rotation     = true
  deletion_window_in_days = var.kms_key_deletion_window_days
  policy                  = data.aws_iam_policy_document.key[0].json
  tags                    = var.tags
}

resource "aws_kms_alias" "this" {
  count         = local.create_key ? 1 : 0
  name          = "alias/${var.bucket_name}"
  target_key_id = aws_kms_key.this[0].key_id
}

# The account administers the key through IAM: the duty policies grant exactly the KMS
# actions each duty needs on this key.
data "aws_iam_policy_document" "key" {
  # checkov:skip=CKV_AWS_109:A key policy's Resource "*" means this key only; the account root delegating to IAM is AWS's default key policy.
  # checkov:skip=CKV_AWS_111:Same: a key policy cannot name another resource, and IAM policies scope who may use the key.
  # checkov:skip=CKV_AWS_356:Same: "*" in a key policy is the key itself.
  count = local.create_key ? 1 : 0
  statement {
    sid       = "AccountAdministersKeyThroughIAM"
    actions   = ["kms:*"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:root"]
    }
  }
}

resource "aws_s3_bucket" "this" {
  # checkov:skip=CKV_AWS_144:Cross-region replication is optional in s3-archive (variable `replication`, on in examples/aws); this bucket is also the replica itself.
  # checkov:skip=CKV2_AWS_62:Event notifications are the deployer's choice; lineage needs none.
  bucket              = var.bucket_name
  object_lock_enabled = true
  force_destroy       = var.force_destroy
  tags                = var.tags
}

resource "aws_s3_bucket_versioning" "this" {
  bucket = aws_s3_bucket.this.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_object_lock_configuration" "this" {
  bucket = aws_s3_bucket.this.id
  rule {
    default_retention {
      mode = var.object_lock_mode
      days = var.retention_days
    }
  }
  depends_on = [aws_s3_bucket_versioning.this]
}

resource "aws_s3_bucket_server_side_encryption_configuration" "this" {
  bucket = aws_s3_bucket.this.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = local.kms_key
    }
    # One KMS request per bucket key period instead of one per object (see docs/deploy.md, costs).
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_ownership_controls" "this" {
  bucket = aws_s3_bucket.this.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  bucket                  = aws_s3_bucket.this.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_lifecycle_configuration" "this" {
  bucket                                 = aws_s3_bucket.this.id
  transition_default_minimum_object_size = var.lifecycle_transition_default_minimum_object_size
  # lineage never uploads in parts, but other tools might: their abandoned parts cost
  # storage and are invisible to listings.
  rule {
    id     = "abort-incomplete-multipart-uploads"
    status = "Enabled"
    filter {}
    abort_incomplete_multipart_upload {
      days_after_initiation = var.abort_incomplete_multipart_days
    }
  }
  depends_on = [aws_s3_bucket_versioning.this]
}

resource "aws_s3_bucket_policy" "this" {
  bucket = aws_s3_bucket.this.id
  policy = data.aws_iam_policy_document.bucket.json
  # S3 refuses a policy while the public access block is still being set.
  depends_on = [aws_s3_bucket_public_access_block.this]
}
