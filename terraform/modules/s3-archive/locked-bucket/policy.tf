# The bucket policy: what the bucket refuses whoever asks, so that "never overwrite, never
# delete" holds even for a client that does not behave. Only Deny statements: access is
# granted by the duty policies (iam.tf of s3-archive), and an explicit Deny here wins over
# any Allow anywhere, including an administrator's s3:*.

locals {
  s3_arn     = "arn:${data.aws_partition.current.partition}:s3:::"
  bucket_arn = aws_s3_bucket.this.arn
  # Every key lineage writes to an object store: data parts, _lineage/ (pointers, seals,
  # commit-key claims, history objects), the Delta log _delta_log/ (one version per
  # seal, create-only like everything else; never a _last_checkpoint) and the Iceberg
  # metadata _iceberg/ (`seal --iceberg`: create-only too; never a version-hint.text).
  store_keys = [
    "${local.bucket_arn}/${local.key_prefix}run_id=*",
    "${local.bucket_arn}/${local.key_prefix}_lineage/*",
    "${local.bucket_arn}/${local.key_prefix}_delta_log/*",
    "${local.bucket_arn}/${local.key_prefix}_iceberg/*",
  ]
  # The only deletable keys: hidden temps `.<name>.<nonce>.tmp` beside their target (only
  # the POSIX publisher writes them; `lineage sweep` removes them). No data key, pointer
  # or seal matches: run ids cannot start with "." and every other name is lineage's own.
  temp_keys = "${local.bucket_arn}/${local.key_prefix}*/.*.tmp"
}

# TLS only, for this bucket and its access-log bucket.
data "aws_iam_policy_document" "tls_only" {
  for_each = merge({ archive = var.bucket_name }, local.create_target ? { logs = var.access_logging.target_bucket } : {})
  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = ["${local.s3_arn}${each.value}", "${local.s3_arn}${each.value}/*"]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

data "aws_iam_policy_document" "bucket" {
  source_policy_documents = [data.aws_iam_policy_document.tls_only["archive"].json]

  # Create-only: a PutObject (or CompleteMultipartUpload, or CopyObject) without
  # If-None-Match is refused. s3:ObjectCreationOperation is false for CreateMultipartUpload,
  # UploadPart and UploadPartCopy, which cannot carry the header: the exemption AWS
  # documents for multipart uploads (their CompleteMultipartUpload still needs it).
  statement {
    sid       = "DenyPutWithoutIfNoneMatch"
    effect    = "Deny"
    actions   = ["s3:PutObject"]
    resources = local.store_keys
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Null"
      variable = "s3:if-none-match"
      values   = ["true"]
    }
    condition {
      test     = "Bool"
      variable = "s3:ObjectCreationOperation"
      values   = ["true"]
    }
  }

  # Never delete: no delete marker over a part or pointer (it would hide it), no removal of
  # a version (Object Lock refuses that too, but GOVERNANCE can be bypassed). Temps only.
  # To tear a trial bucket down, remove this policy first (terraform destroy does).
  statement {
    sid           = "DenyDeleteExceptTemps"
    effect        = "Deny"
    actions       = ["s3:DeleteObject", "s3:DeleteObjectVersion"]
    not_resources = [local.temp_keys]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
  }

  # The duty roles may not loosen any of the above, nor the retention of an object (their
  # deletes are denied above).
  dynamic "statement" {
    for_each = length(var.duty_principal_arns) > 0 ? [1] : []
    content {
      sid    = "DenyProtectionChangesByDutyRoles"
      effect = "Deny"
      actions = [
        "s3:PutBucketPolicy",
        "s3:DeleteBucketPolicy",
        "s3:PutBucketObjectLockConfiguration",
        "s3:PutBucketVersioning",
        "s3:PutLifecycleConfiguration",
        "s3:PutEncryptionConfiguration",
        "s3:PutReplicationConfiguration",
        "s3:PutBucketOwnershipControls",
        "s3:PutBucketPublicAccessBlock",
        "s3:PutObjectRetention",
        "s3:PutObjectLegalHold",
        "s3:BypassGovernanceRetention",
      ]
      resources = [local.bucket_arn, "${local.bucket_arn}/*"]
      principals {
        type        = "*"
        identifiers = ["*"]
      }
      condition {
        test     = "ArnLike"
        variable = "aws:PrincipalArn"
        values   = var.duty_principal_arns
      }
    }
  }
}
