variable "region" {
  description = "AWS region of the archive, the function and the landing bucket."
  type        = string
  default     = "eu-central-1"
}

variable "bucket_name" {
  description = "Name of the archive bucket (globally unique); its access logs go to <bucket_name>-logs."
  type        = string
}

variable "store_prefix" {
  description = "Key prefix of the store in the archive bucket."
  type        = string
  default     = "lineage"
}

variable "object_lock_mode" {
  description = "GOVERNANCE (trials) or COMPLIANCE (production): see docs/deploy.md."
  type        = string
  default     = "GOVERNANCE"
}

variable "retention_days" {
  description = "Object Lock retention of every object version, in days."
  type        = number
  default     = 365
}

variable "landing_bucket" {
  description = "An existing bucket where jobs drop event files (NDJSON, CSV, Parquet); the function is notified of each new object. Keep it versioned: the commit key then names the exact version."
  type        = string
}

variable "landing_prefix" {
  description = "Only objects under this prefix trigger the function."
  type        = string
  default     = "events/"
}

variable "function_name" {
  description = "Name of the function, its role, log group and queues."
  type        = string
  default     = "lineage-writer"
}

variable "package_zip" {
  description = "The deployment zip made by `scripts/dist.sh` (handler + wheel), relative to this directory."
  type        = string
  default     = "../../../dist/lambda-writer.zip"
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default = {
    project = "lineage-store"
  }
}
