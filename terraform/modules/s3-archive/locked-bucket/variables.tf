variable "bucket_name" {
  description = "Name of the bucket."
  type        = string
}

variable "store_prefix" {
  description = "Key prefix of the lineage store inside the bucket (\"\" for the bucket root), without slashes at either end."
  type        = string
}

variable "object_lock_mode" {
  description = "Default Object Lock retention mode: GOVERNANCE or COMPLIANCE."
  type        = string
}

variable "retention_days" {
  description = "Default Object Lock retention, in days, of every new object version."
  type        = number
}

variable "kms_key_arn" {
  description = "KMS key for SSE-KMS; null creates a key for this bucket."
  type        = string
  default     = null
}

variable "kms_key_deletion_window_days" {
  description = "Waiting period before a key this module created is deleted."
  type        = number
}

variable "force_destroy" {
  description = "Let `terraform destroy` empty the bucket (GOVERNANCE mode only: it bypasses the governance retention)."
  type        = bool
}

variable "abort_incomplete_multipart_days" {
  description = "Days after which an incomplete multipart upload is aborted."
  type        = number
}

variable "lifecycle_transition_default_minimum_object_size" {
  description = "Passed to aws_s3_bucket_lifecycle_configuration; \"\" for LocalStack 4.0.3 (see the module README)."
  type        = string
}

variable "access_logging" {
  description = "Server access logging (see the module's variable of the same name); null for none."
  type = object({
    target_bucket        = string
    target_prefix        = optional(string)
    create_target_bucket = optional(bool, false)
    log_retention_days   = optional(number, 365)
  })
}

variable "duty_principal_arns" {
  description = "Principals (roles) holding the writer/sealer/auditor duties: the bucket policy denies them any change of the bucket's protection."
  type        = list(string)
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
}
