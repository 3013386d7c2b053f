# The least-privilege policy documents of the three duties and the temps-only delete grant
# of `lineage sweep`: pure data (no AWS call), so tests/python/test_duty_roles.py renders
# them offline and checks every request each duty's commands make against them. What each
# `lineage` command needs is in docs/operations.md ("Least-privilege roles").

locals {
  key_prefix  = var.store_prefix == "" ? "" : "${var.store_prefix}/"
  bucket_arn  = "arn:${var.partition}:s3:::${var.bucket_name}"
  replica_arn = var.replica_bucket_name == null ? null : "arn:${var.partition}:s3:::${var.replica_bucket_name}"
  keys = {
    data        = "${local.bucket_arn}/${local.key_prefix}run_id=*"
    pointers    = "${local.bucket_arn}/${local.key_prefix}_lineage/commits/*"
    commit_keys = "${local.bucket_arn}/${local.key_prefix}_lineage/commit-keys/*"
    index       = "${local.bucket_arn}/${local.key_prefix}_lineage/index/*"
    seals       = "${local.bucket_arn}/${local.key_prefix}_lineage/seals/*"
    heads       = "${local.bucket_arn}/${local.key_prefix}_lineage/heads/*"
    tiles       = "${local.bucket_arn}/${local.key_prefix}_lineage/tiles/*"
    tlog        = "${local.bucket_arn}/${local.key_prefix}_lineage/tlog/*"
    leaves      = "${local.bucket_arn}/${local.key_prefix}_lineage/leaves/*"
    compacted   = "${local.bucket_arn}/${local.key_prefix}_lineage/compacted/*"
    identity    = "${local.bucket_arn}/${local.key_prefix}_lineage/store.json"
    delta       = "${local.bucket_arn}/${local.key_prefix}_delta_log/*"
    iceberg     = "${local.bucket_arn}/${local.key_prefix}_iceberg/*"
    meta        = "${local.bucket_arn}/${local.key_prefix}_lineage/*"
    temps       = "${local.bucket_arn}/${local.key_prefix}*/.*.tmp"
  }
  # Buckets an auditor reads: the archive and, when there is one, its replica.
  audited_buckets = compact([local.bucket_arn, local.replica_arn])
  audited_keys    = [for b in local.audited_buckets : "${b}/${local.key_prefix}*"]
  audited_kms     = compact([var.kms_key_arn, var.replica_kms_key_arn])
}

# Listing the store, for every duty. With a prefix, only under it.
data "aws_iam_policy_document" "list" {
  statement {
    sid       = "ListStore"
    actions   = ["s3:ListBucket"]
    resources = local.audited_buckets
    dynamic "condition" {
      for_each = var.store_prefix == "" ? [] : [1]
      content {
        test     = "StringLike"
        variable = "s3:prefix"
        values   = [var.store_prefix, "${var.store_prefix}/*"]
      }
    }
  }
}

# Writing (and reading) objects encrypted with the archive's key: writer and sealer.
data "aws_iam_policy_document" "encrypt" {
  statement {
    sid       = "EncryptWithArchiveKey"
    actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
    resources = [var.kms_key_arn]
  }
}

# `lineage append` (and `repair`): create parts, pointers, index entries, commit-key claims
# and, on the first append into a new store, the store identity; read them back (after an
# ambiguous answer, to compare a commit key's claim, the identity on every append). Every
# put is create-only (the bucket policy refuses any other); no delete, no seal.
data "aws_iam_policy_document" "writer" {
  source_policy_documents = [data.aws_iam_policy_document.list.json, data.aws_iam_policy_document.encrypt.json]
  statement {
    sid       = "CreateAndReadParts"
    actions   = ["s3:PutObject", "s3:GetObject"]
    resources = [local.keys.data, local.keys.pointers, local.keys.index, local.keys.commit_keys, local.keys.identity]
  }
}

# `lineage seal`, `compact` and `witness`: read every pointer and seal, create the next seal
# and what finishes it (hash tiles, leaf locators, its Delta version and checkpoint, its
# head marker; the store identity when a store written before identities has none); read
# the parts it seals (footers for the Delta stats; compaction reads them whole) and the
# Delta log; create compacted parts and compaction records; with `--iceberg`, create and
# read the seal's Iceberg metadata under _iceberg/. (`witness` writes its record
# into the witness store, a grant of its own.)
data "aws_iam_policy_document" "sealer" {
  source_policy_documents = [data.aws_iam_policy_document.list.json, data.aws_iam_policy_document.encrypt.json]
  statement {
    sid       = "CreateSeals"
    actions   = ["s3:PutObject"]
    resources = [local.keys.seals, local.keys.heads, local.keys.tiles, local.keys.tlog, local.keys.leaves, local.keys.identity, local.keys.delta, local.keys.compacted, local.keys.iceberg]
  }
  statement {
    sid       = "ReadPointersAndSeals"
    actions   = ["s3:GetObject"]
    resources = [local.keys.meta, local.keys.delta, local.keys.data, local.keys.iceberg]
  }
}

# `lineage verify`, `log`, `files`, `scan`, `report`, `export`, `prove`: read and list only, on the archive and its replica,
# plus the bucket settings and object retention an auditor wants to see as evidence.
data "aws_iam_policy_document" "auditor" {
  source_policy_documents = [data.aws_iam_policy_document.list.json]
  statement {
    sid       = "ReadObjectsVersionsAndRetention"
    actions   = ["s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectRetention", "s3:GetObjectLegalHold"]
    resources = local.audited_keys
  }
  statement {
    sid = "ReadBucketProtection"
    actions = [
      "s3:ListBucketVersions",
      "s3:GetBucketObjectLockConfiguration",
      "s3:GetBucketVersioning",
      "s3:GetBucketPolicy",
      "s3:GetEncryptionConfiguration",
      "s3:GetLifecycleConfiguration",
      "s3:GetReplicationConfiguration",
      "s3:GetBucketLogging",
    ]
    resources = local.audited_buckets
  }
  statement {
    sid       = "DecryptWithArchiveKeys"
    actions   = ["kms:Decrypt"]
    resources = local.audited_kms
  }
}

# `lineage sweep`: delete hidden temps only (attach it beside the auditor policy, which
# gives the listing and reads sweep also needs).
data "aws_iam_policy_document" "sweep" {
  statement {
    sid       = "DeleteTempsOnly"
    actions   = ["s3:DeleteObject"]
    resources = [local.keys.temps]
  }
}
