# A real deployment: the archive in one region, its replica in another, the duty roles,
# access logs and the Glue table for Athena. See README.md here and docs/deploy.md.

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

provider "aws" {
  alias  = "replica"
  region = var.replica_region
  default_tags {
    tags = var.tags
  }
}

module "archive" {
  source = "../../modules/s3-archive"
  providers = {
    aws         = aws
    aws.replica = aws.replica
  }
  bucket_name      = var.bucket_name
  store_prefix     = var.store_prefix
  object_lock_mode = var.object_lock_mode
  retention_days   = var.retention_days
  force_destroy    = var.force_destroy
  access_logging = {
    target_bucket        = "${var.bucket_name}-logs"
    create_target_bucket = true
  }
  replication = {
    bucket_name = var.replica_bucket_name
    access_logging = {
      target_bucket        = "${var.replica_bucket_name}-logs"
      create_target_bucket = true
    }
  }
  duty_role_trust_policies = var.duty_role_trust_policies
  duty_principal_arns      = var.duty_principal_arns
  glue = {
    enabled                   = true
    target_crs_values         = var.target_crs_values
    iceberg_metadata_location = var.iceberg_metadata_location
  }
}
