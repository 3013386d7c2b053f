variable "bucket_name" {
  description = "Name of the archive bucket to create in LocalStack (the access-log bucket is <bucket_name>-logs)."
  type        = string
}

variable "region" {
  description = "Region for the provider and the bucket."
  type        = string
  default     = "us-east-1"
}

variable "endpoint" {
  description = "LocalStack's URL (every service on one port)."
  type        = string
  default     = "http://127.0.0.1:4566"
}
