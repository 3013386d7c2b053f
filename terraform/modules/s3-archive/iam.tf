# Least-privilege policies for the three duties, the optional roles that hold them, and
# the optional temps-only delete grant for `lineage sweep`. What each `lineage` command
# needs is in docs/object-stores.md ("Least-privilege permissions").

locals {
  bucket_arn  = "arn:${data.aws_partition.current.partition}:s3:::${var.bucket_name}"
  replica_arn = var.replication == null ? null : "arn:${data.aws_partition.current.partition}:s3:::${var.replication.bucket_name}"
  duty_policies = {
    writer  = module.duty_policies.writer
    sealer  = module.duty_policies.sealer
    auditor = module.duty_policies.auditor
  }
}

# The documents (duty-policies/: pure data, rendered offline by the tests).
module "duty_policies" {
  source              = "./duty-policies"
  partition           = data.aws_partition.current.partition
  bucket_name         = var.bucket_name
  store_prefix        = var.store_prefix
  replica_bucket_name = var.replication == null ? null : var.replication.bucket_name
  kms_key_arn         = module.archive.kms_key_arn
  replica_kms_key_arn = try(module.replica[0].kms_key_arn, null)
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
  policy      = module.duty_policies.sweep
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
