# An archive and its Lambda writer: objects landing in an existing bucket, and NDJSON
# messages sent to a queue made here, are appended to the archive by
# examples/lambda/handler.py. Validated by tests/python/test_terraform.py (LocalStack's
# Lambda needs Docker, which the test machines do not have: validate and checkov only).
# See README.md here and docs/deploy.md.

terraform {
  required_version = ">= 1.5.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.100.0, < 6.0.0"
    }
  }
}

provider "aws" {
  region = var.region
  default_tags {
    tags = var.tags
  }
}

module "archive" {
  source = "../../modules/s3-archive"
  providers = {
    aws         = aws
    aws.replica = aws
  }
  bucket_name      = var.bucket_name
  store_prefix     = var.store_prefix
  object_lock_mode = var.object_lock_mode
  retention_days   = var.retention_days
  access_logging = {
    target_bucket        = "${var.bucket_name}-logs"
    create_target_bucket = true
  }
  glue = {
    enabled = false
  }
}

module "writer" {
  source            = "../../modules/lambda-writer"
  function_name     = var.function_name
  archive_bucket    = module.archive.bucket
  store_prefix      = var.store_prefix
  writer_policy_arn = module.archive.policy_arns["writer"]
  package = {
    zip = var.package_zip
  }
  s3_trigger = {
    bucket = var.landing_bucket
    prefix = var.landing_prefix
  }
  sqs_trigger = {
    batch_size                         = 10
    maximum_batching_window_in_seconds = 5
  }
}
