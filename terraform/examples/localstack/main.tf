# The s3-archive module applied to LocalStack 4.0.3 (started with SERVICES=s3,kms,iam,sts).
# Applied and destroyed by tests/python/test_terraform.py; see README.md here.

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
  # "test"/"test" are LocalStack's documented dummy credentials, accepted by LocalStack only; this provider never talks to AWS.
  region                      = var.region
  access_key                  = "test"
  secret_key                  = "test"
  s3_use_path_style           = true
  skip_credentials_validation = true
  skip_metadata_api_check     = true
  skip_requesting_account_id  = true
  endpoints {
    s3  = var.endpoint
    kms = var.endpoint
    iam = var.endpoint
    sts = var.endpoint
  }
}

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

locals {
  # The duty roles may be assumed by principals of this account (LocalStack's 000000000000).
  trust = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Action    = "sts:AssumeRole"
      Principal = { AWS = "arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:root" }
    }]
  })
}

module "archive" {
  source = "../../modules/s3-archive"
  providers = {
    aws         = aws
    aws.replica = aws
  }
  bucket_name = var.bucket_name
  # GOVERNANCE so that `terraform destroy` can empty the bucket (force_destroy bypasses
  # the governance retention); COMPLIANCE objects could not be removed for retention_days.
  object_lock_mode = "GOVERNANCE"
  retention_days   = 1
  force_destroy    = true
  # LocalStack 4.0.3 never sends the header the provider waits for after a lifecycle
  # PUT; without this, apply hangs for minutes.
  lifecycle_transition_default_minimum_object_size = ""
  access_logging = {
    target_bucket        = "${var.bucket_name}-logs"
    create_target_bucket = true
  }
  duty_role_trust_policies = {
    writer  = local.trust
    sealer  = local.trust
    auditor = local.trust
  }
  sweep_grant = true
  # LocalStack's community edition has no Glue (it answers 501); examples/aws has it on.
  glue = {
    enabled = false
  }
  tags = {
    project = "lineage-store"
    example = "localstack"
  }
}
