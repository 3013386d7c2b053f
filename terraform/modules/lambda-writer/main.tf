# The lineage writer on AWS Lambda: examples/lambda/handler.py appending the events of S3
# objects or SQS messages to the archive made by the s3-archive module, with the commit
# keys that make retried invocations publish nothing new. See README.md here and
# docs/deploy.md ("An AWS Lambda writer").

data "aws_partition" "current" {}
data "aws_caller_identity" "current" {}
data "aws_region" "current" {}

locals {
  partition   = data.aws_partition.current.partition
  account     = data.aws_caller_identity.current.account_id
  region      = data.aws_region.current.name
  store_url   = trimsuffix("s3://${var.archive_bucket}/${var.store_prefix}", "/")
  create_key  = var.kms_key_arn == null
  kms_key_arn = local.create_key ? aws_kms_key.this[0].arn : var.kms_key_arn
  log_group   = "/aws/lambda/${var.function_name}"
  zip         = var.package.zip != null
  environment = merge(
    { LINEAGE_STORE = local.store_url },
    var.batch_rows == null ? {} : { LINEAGE_BATCH_ROWS = tostring(var.batch_rows) },
    # Refused messages: the handler sends them here itself (not back to the event queue).
    var.sqs_trigger == null ? {} : { LINEAGE_REFUSED_QUEUE_URL = aws_sqs_queue.dead_letter[0].url },
  )
}

# --- encryption of the function's environment and logs ---------------------------------

resource "aws_kms_key" "this" {
  count                   = local.create_key ? 1 : 0
  description             = "${var.function_name}: Lambda environment and CloudWatch logs"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  policy                  = data.aws_iam_policy_document.key[0].json
  tags                    = var.tags
}

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
      identifiers = ["arn:${local.partition}:iam::${local.account}:root"]
    }
  }
  statement {
    sid       = "CloudWatchLogsEncryptsThisLogGroup"
    actions   = ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"]
    resources = ["*"]
    principals {
      type        = "Service"
      identifiers = ["logs.${local.region}.amazonaws.com"]
    }
    condition {
      test     = "ArnEquals"
      variable = "kms:EncryptionContext:aws:logs:arn"
      values   = ["arn:${local.partition}:logs:${local.region}:${local.account}:log-group:${local.log_group}"]
    }
  }
}

resource "aws_cloudwatch_log_group" "this" {
  name              = local.log_group
  retention_in_days = var.log_retention_days
  kms_key_id        = local.kms_key_arn
  tags              = var.tags
}

# --- the role: the archive's writer duty, and what the trigger and logs need ------------

data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account]
    }
  }
}

resource "aws_iam_role" "this" {
  name               = var.function_name
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = var.tags
}

# Create-only puts and reads of parts, pointers, index entries, commit-key claims and the
# store identity under the store's prefix (the bucket policy refuses anything else); no
# seal, no delete.
resource "aws_iam_role_policy_attachment" "writer" {
  role       = aws_iam_role.this.name
  policy_arn = var.writer_policy_arn
}

data "aws_iam_policy_document" "function" {
  statement {
    sid       = "WriteOwnLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.this.arn}:*"]
  }
  statement {
    sid       = "DecryptEnvironment"
    actions   = ["kms:Decrypt"]
    resources = [local.kms_key_arn]
  }
  statement {
    sid       = "ReportFailedInvocations"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.failed.arn]
  }
  dynamic "statement" {
    for_each = var.s3_trigger == null ? [] : [var.s3_trigger]
    content {
      sid       = "ReadTriggeringObjects"
      actions   = ["s3:GetObject", "s3:GetObjectVersion"]
      resources = ["arn:${local.partition}:s3:::${statement.value.bucket}/${statement.value.prefix}*"]
    }
  }
  dynamic "statement" {
    for_each = var.sqs_trigger == null ? [] : [1]
    content {
      sid       = "ConsumeEventQueue"
      actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"]
      resources = [aws_sqs_queue.events[0].arn]
    }
  }
  dynamic "statement" {
    for_each = var.sqs_trigger == null ? [] : [1]
    content {
      sid       = "SetRefusedMessagesAside"
      actions   = ["sqs:SendMessage"]
      resources = [aws_sqs_queue.dead_letter[0].arn]
    }
  }
}

resource "aws_iam_role_policy" "function" {
  name   = "${var.function_name}-trigger-and-logs"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.function.json
}

resource "aws_iam_role_policy_attachment" "xray" {
  role       = aws_iam_role.this.name
  policy_arn = "arn:${local.partition}:iam::aws:policy/AWSXRayDaemonWriteAccess"
}

resource "aws_iam_role_policy_attachment" "vpc" {
  count      = length(var.subnet_ids) > 0 ? 1 : 0
  role       = aws_iam_role.this.name
  policy_arn = "arn:${local.partition}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
}

# --- the function -----------------------------------------------------------------------

# Invocations that failed after Lambda's retries (S3 trigger), kept 14 days for replay.
resource "aws_sqs_queue" "failed" {
  name                      = "${var.function_name}-failed"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
  tags                      = var.tags
}

resource "aws_lambda_function" "this" {
  # checkov:skip=CKV_AWS_117:Running in a VPC is optional (subnet_ids); the function reaches only S3, SQS and CloudWatch, whose access the role bounds.
  # checkov:skip=CKV_AWS_272:Code signing is optional (code_signing_config_arn): it needs an AWS Signer profile of the deployer's.
  function_name                  = var.function_name
  role                           = aws_iam_role.this.arn
  package_type                   = local.zip ? "Zip" : "Image"
  filename                       = var.package.zip
  source_code_hash               = local.zip ? filebase64sha256(var.package.zip) : null
  image_uri                      = var.package.image_uri
  handler                        = local.zip ? "handler.handler" : null
  runtime                        = local.zip ? var.runtime : null
  architectures                  = [var.architecture]
  memory_size                    = var.memory_size
  timeout                        = var.timeout_seconds
  reserved_concurrent_executions = var.reserved_concurrency
  kms_key_arn                    = local.kms_key_arn
  code_signing_config_arn        = var.code_signing_config_arn
  tags                           = var.tags

  ephemeral_storage {
    size = var.ephemeral_storage_mb
  }
  environment {
    variables = local.environment
  }
  tracing_config {
    mode = "Active"
  }
  dead_letter_config {
    target_arn = aws_sqs_queue.failed.arn
  }
  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.this.name
  }
  dynamic "vpc_config" {
    for_each = length(var.subnet_ids) > 0 ? [1] : []
    content {
      subnet_ids         = var.subnet_ids
      security_group_ids = var.security_group_ids
    }
  }

  depends_on = [aws_iam_role_policy.function, aws_iam_role_policy_attachment.writer]
}

# --- S3 trigger (asynchronous: two retries, then the failed-invocations queue) ----------

resource "aws_lambda_function_event_invoke_config" "this" {
  count                        = var.s3_trigger == null ? 0 : 1
  function_name                = aws_lambda_function.this.function_name
  maximum_retry_attempts       = 2
  maximum_event_age_in_seconds = 21600
  destination_config {
    on_failure {
      destination = aws_sqs_queue.failed.arn
    }
  }
}

resource "aws_lambda_permission" "s3" {
  count          = var.s3_trigger == null ? 0 : 1
  statement_id   = "AllowS3ObjectCreated"
  action         = "lambda:InvokeFunction"
  function_name  = aws_lambda_function.this.function_name
  principal      = "s3.amazonaws.com"
  source_arn     = "arn:${local.partition}:s3:::${var.s3_trigger.bucket}"
  source_account = local.account
}

resource "aws_s3_bucket_notification" "this" {
  count  = var.s3_trigger == null ? 0 : 1
  bucket = var.s3_trigger.bucket
  dynamic "lambda_function" {
    for_each = var.s3_trigger.suffixes
    content {
      lambda_function_arn = aws_lambda_function.this.arn
      events              = ["s3:ObjectCreated:*"]
      filter_prefix       = var.s3_trigger.prefix
      filter_suffix       = lambda_function.value
    }
  }
  depends_on = [aws_lambda_permission.s3]
}

# --- SQS trigger (batches; failed messages come back, refused ones end in the DLQ) ------
# A refused message (bad input: retrying cannot change it) is sent to the DLQ by the
# handler itself, with the refusal in its attributes, and not reported in
# batchItemFailures; the redrive policy (max_receive_count) bounds only the messages that
# keep failing for other reasons (the store unreachable, the DLQ refusing the message).

resource "aws_sqs_queue" "dead_letter" {
  count                     = var.sqs_trigger == null ? 0 : 1
  name                      = "${var.function_name}-events-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
  tags                      = var.tags
}

resource "aws_sqs_queue" "events" {
  count                     = var.sqs_trigger == null ? 0 : 1
  name                      = "${var.function_name}-events"
  message_retention_seconds = var.sqs_trigger.message_retention_seconds
  # AWS's advice for Lambda consumers: at least six times the function's timeout.
  visibility_timeout_seconds = min(43200, 6 * var.timeout_seconds)
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dead_letter[0].arn
    maxReceiveCount     = var.sqs_trigger.max_receive_count
  })
  tags = var.tags
}

resource "aws_lambda_event_source_mapping" "sqs" {
  count                              = var.sqs_trigger == null ? 0 : 1
  event_source_arn                   = aws_sqs_queue.events[0].arn
  function_name                      = aws_lambda_function.this.arn
  batch_size                         = var.sqs_trigger.batch_size
  maximum_batching_window_in_seconds = var.sqs_trigger.maximum_batching_window_in_seconds
  function_response_types            = ["ReportBatchItemFailures"]
}
