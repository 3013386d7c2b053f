variable "partition" {
  description = "The AWS partition of the ARNs (aws, aws-cn, aws-us-gov)."
  type        = string
  default     = "aws"
}

variable "bucket_name" {
  description = "The archive bucket."
  type        = string
}

variable "store_prefix" {
  description = "Key prefix of the store inside the bucket, without a trailing slash (\"\" for the bucket root)."
  type        = string
  default     = ""
}

variable "replica_bucket_name" {
  description = "The replica bucket an auditor also reads, or null."
  type        = string
  default     = null
}

variable "kms_key_arn" {
  description = "The archive's KMS key (writer and sealer encrypt with it; the auditor decrypts)."
  type        = string
}

variable "replica_kms_key_arn" {
  description = "The replica's KMS key, or null."
  type        = string
  default     = null
}
