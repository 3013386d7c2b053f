# Least-privilege policies for the three duties, the optional roles that hold them, and
# the optional temps-only delete grant for `lineage sweep`. What each `lineage` command
# needs is in docs/object-stores.md ("Least-privilege permissions").

locals {
  bucket_arn  = "arn:${data.aws_partition.current.partition}:s3:::${var.bucket_name}"
  replica_arn = var.replication == null ? null : "arn:${data.aws_partition.current.partition}:s3:::${var.replication.bucket_name}"
  keys = {
    data        = "${local.bucket_arn}/${local.key_prefix}run_id=*"
    pointers    = "${local.bucket_arn}/${local.key_prefix}_lineage/commits/*"
    commit_keys = "${local.bucket_arn}/${local.key_prefix}_lineage/commit-keys/*"
    seals       = "${local.bucket_arn}/${local.key_prefix}_lineage/seals/*"
    heads       = "${local.bucket_arn}/${local.key_prefix}_lineage/heads/*"
    tiles       = "${local.bucket_arn}/${local.key_prefix}_lineage/tiles/*"
    leaves      = "${local.bucket_arn}/${local.key_prefix}_lineage/leaves/*"
    identity    = "${local.bucket_arn}/${local.key_prefix}_lineage/store.json"
    delta       = "${local.bucket_arn}/${local.key_prefix}_delta_log/*"
    meta        = "${local.bucket_arn}/${local.key_prefix}_lineage/*"
    all         = "${local.bucket_arn}/${local.key_prefix}*"
    temps       = "${local.bucket_arn}/${local.key_prefix}*/.*.tmp"
  }
  # Buckets an auditor reads: the archive and, when there is one, its replica.
  audited_buckets = compact([local.bucket_arn, local.replica_arn])
  audited_keys    = [for b in local.audited_buckets : "${b}/${local.key_prefix}*"]
  audited_kms     = compact([module.archive.kms_key_arn, try(module.replica[0].kms_key_arn, null)])
  duty_policies = {
    writer  = data.aws_iam_policy_document.writer.json
    sealer  = data.aws_iam_policy_document.sealer.json
    auditor = data.aws_iam_policy_document.auditor.json
  }
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
    resources = [module.archive.kms_key_arn]
  }
}

# `lineage append` (and `repair`): create parts, pointers and commit-key claims, and read
# them back (after an ambiguous answer, and to compare a commit key's claim). Every put is
# create-only (the bucket policy refuses any other); no delete, no seal.
data "aws_iam_policy_document" "writer" {
  source_policy_documents = [data.aws_iam_policy_document.list.json, data.aws_iam_policy_document.encrypt.json]
  statement {
    sid       = "CreateAndReadParts"
    actions   = ["s3:PutObject", "s3:GetObject"]
    resources = [local.keys.data, local.keys.pointers, local.keys.commit_keys]
  }
}

# `lineage seal`: read every pointer and seal, create the next seal and what finishes it
# (hash tiles, leaf locators, its Delta version, its head marker; the store identity when
# a store written before identities has none); read the footers of the parts it seals
# (the Delta version's stats) and the Delta log.
data "aws_iam_policy_document" "sealer" {
  source_policy_documents = [data.aws_iam_policy_document.list.json, data.aws_iam_policy_document.encrypt.json]
  statement {
    sid       = "CreateSeals"
    actions   = ["s3:PutObject"]
    resources = [local.keys.seals, local.keys.heads, local.keys.tiles, local.keys.leaves, local.keys.identity, local.keys.delta]
  }
  statement {
    sid       = "ReadPointersAndSeals"
    actions   = ["s3:GetObject"]
    resources = [local.keys.meta, local.keys.delta, local.keys.data]
  }
}

# `lineage verify`, `log`, `prove`: read and list only, on the archive and its replica,
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

resource "aws_iam_policy" "duty" {
  for_each    = local.duty_policies
  name        = "${local.name}-lineage-${each.key}"
  description = "lineage-store ${each.key} of s3://${var.bucket_name}/${var.store_prefix}"
  policy      = each.value
  tags        = var.tags
}

resource "aws_iam_policy" "sweep" {
  count       = var.sweep_grant ? 1 : 0
  name        = "${local.name}-lineage-sweep-temps"
  description = "lineage-store sweep: delete hidden temps of s3://${var.bucket_name}/${var.store_prefix}, nothing else"
  policy      = data.aws_iam_policy_document.sweep.json
  tags        = var.tags
}

resource "aws_iam_role" "duty" {
  for_each           = var.duty_role_trust_policies
  name               = "${local.name}-lineage-${each.key}"
  description        = "lineage-store ${each.key} of s3://${var.bucket_name}/${var.store_prefix}"
  assume_role_policy = each.value
  tags               = var.tags
}

resource "aws_iam_role_policy_attachment" "duty" {
  for_each   = var.duty_role_trust_policies
  role       = aws_iam_role.duty[each.key].name
  policy_arn = aws_iam_policy.duty[each.key].arn
}
