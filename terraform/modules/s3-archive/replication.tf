# Optional cross-region replication of the archive into a second Object Lock bucket
# (module.replica, made through aws.replica), for a cross-region audit copy. Every new
# object version is replicated with its retention; delete markers are not (a delete is
# denied anyway), so the replica keeps whatever the archive ever held.

locals {
  replicate = var.replication != null
}

data "aws_iam_policy_document" "replication_trust" {
  count = local.replicate ? 1 : 0
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["s3.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }
  }
}

data "aws_iam_policy_document" "replication" {
  count = local.replicate ? 1 : 0
  statement {
    sid       = "ReadReplicationConfiguration"
    actions   = ["s3:GetReplicationConfiguration", "s3:ListBucket"]
    resources = [local.bucket_arn]
  }
  statement {
    sid = "ReadSourceVersions"
    actions = [
      "s3:GetObjectVersionForReplication",
      "s3:GetObjectVersionAcl",
      "s3:GetObjectVersionTagging",
      "s3:GetObjectRetention",
      "s3:GetObjectLegalHold",
    ]
    resources = ["${local.bucket_arn}/*"]
  }
  # No s3:ReplicateDelete: delete markers are not replicated.
  statement {
    sid       = "WriteReplicas"
    actions   = ["s3:ReplicateObject", "s3:ReplicateTags"]
    resources = ["${local.replica_arn}/*"]
  }
  statement {
    sid       = "DecryptSource"
    actions   = ["kms:Decrypt"]
    resources = [module.archive.kms_key_arn]
    condition {
      test     = "StringLike"
      variable = "kms:ViaService"
      values   = ["s3.${data.aws_region.current.name}.amazonaws.com"]
    }
  }
  statement {
    sid       = "EncryptReplica"
    actions   = ["kms:Encrypt", "kms:GenerateDataKey"]
    resources = [module.replica[0].kms_key_arn]
  }
}

resource "aws_iam_role" "replication" {
  count              = local.replicate ? 1 : 0
  name               = "${local.name}-lineage-replication"
  description        = "S3 replication of s3://${var.bucket_name} to s3://${var.replication.bucket_name}"
  assume_role_policy = data.aws_iam_policy_document.replication_trust[0].json
  tags               = var.tags
}

resource "aws_iam_role_policy" "replication" {
  count  = local.replicate ? 1 : 0
  name   = "replicate-lineage-archive"
  role   = aws_iam_role.replication[0].id
  policy = data.aws_iam_policy_document.replication[0].json
}

resource "aws_s3_bucket_replication_configuration" "this" {
  count  = local.replicate ? 1 : 0
  bucket = module.archive.bucket
  role   = aws_iam_role.replication[0].arn
  rule {
    id     = "lineage-archive-replica"
    status = "Enabled"
    filter {
      prefix = local.key_prefix
    }
    delete_marker_replication {
      status = "Disabled"
    }
    source_selection_criteria {
      sse_kms_encrypted_objects {
        status = "Enabled"
      }
    }
    destination {
      bucket        = module.replica[0].bucket_arn
      storage_class = var.replication.storage_class
      encryption_configuration {
        replica_kms_key_id = module.replica[0].kms_key_arn
      }
    }
  }
  # Both buckets versioned (and locked) before S3 accepts the rule.
  depends_on = [module.archive, module.replica]
}
