# Optional server access logging, into an existing bucket or one made here.

locals {
  logging       = var.access_logging != null
  create_target = local.logging && try(var.access_logging.create_target_bucket, false)
}

resource "aws_s3_bucket_logging" "this" {
  count         = local.logging ? 1 : 0
  bucket        = aws_s3_bucket.this.id
  target_bucket = local.create_target ? aws_s3_bucket.logs[0].id : var.access_logging.target_bucket
  target_prefix = coalesce(var.access_logging.target_prefix, "${var.bucket_name}/")
}

# The target of access logs: S3 delivers them only to SSE-S3 buckets, and they expire.
resource "aws_s3_bucket" "logs" {
  # checkov:skip=CKV_AWS_145:S3 server access logs can only be delivered to a bucket encrypted with SSE-S3, not SSE-KMS.
  # checkov:skip=CKV_AWS_144:Access logs are operational data; only the archive itself is replicated.
  # checkov:skip=CKV2_AWS_62:Nothing reacts to log deliveries.
  count         = local.create_target ? 1 : 0
  bucket        = var.access_logging.target_bucket
  force_destroy = var.force_destroy
  tags          = var.tags
}

resource "aws_s3_bucket_versioning" "logs" {
  count  = local.create_target ? 1 : 0
  bucket = aws_s3_bucket.logs[0].id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "logs" {
  count  = local.create_target ? 1 : 0
  bucket = aws_s3_bucket.logs[0].id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

resource "aws_s3_bucket_ownership_controls" "logs" {
  count  = local.create_target ? 1 : 0
  bucket = aws_s3_bucket.logs[0].id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "logs" {
  count                   = local.create_target ? 1 : 0
  bucket                  = aws_s3_bucket.logs[0].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_lifecycle_configuration" "logs" {
  count                                  = local.create_target ? 1 : 0
  bucket                                 = aws_s3_bucket.logs[0].id
  transition_default_minimum_object_size = var.lifecycle_transition_default_minimum_object_size
  rule {
    id     = "expire-access-logs"
    status = "Enabled"
    filter {}
    expiration {
      days = var.access_logging.log_retention_days
    }
    noncurrent_version_expiration {
      noncurrent_days = 1
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = var.abort_incomplete_multipart_days
    }
  }
  depends_on = [aws_s3_bucket_versioning.logs]
}

# With bucket-owner-enforced ownership, log delivery is granted by policy (not ACLs), only
# for this archive bucket and account.
data "aws_iam_policy_document" "logs" {
  count                   = local.create_target ? 1 : 0
  source_policy_documents = [data.aws_iam_policy_document.tls_only["logs"].json]
  statement {
    sid       = "S3ServerAccessLogsDelivery"
    actions   = ["s3:PutObject"]
    resources = ["${aws_s3_bucket.logs[0].arn}/*"]
    principals {
      type        = "Service"
      identifiers = ["logging.s3.amazonaws.com"]
    }
    condition {
      test     = "ArnLike"
      variable = "aws:SourceArn"
      values   = [aws_s3_bucket.this.arn]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

resource "aws_s3_bucket_policy" "logs" {
  count      = local.create_target ? 1 : 0
  bucket     = aws_s3_bucket.logs[0].id
  policy     = data.aws_iam_policy_document.logs[0].json
  depends_on = [aws_s3_bucket_public_access_block.logs]
}
