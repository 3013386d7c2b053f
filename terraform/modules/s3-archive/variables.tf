variable "bucket_name" {
  description = "Name of the archive bucket (globally unique)."
  type        = string
}

variable "store_prefix" {
  description = "Key prefix of the lineage store inside the bucket, without slashes at either end; \"\" (default) for the bucket root. The store URL is s3://<bucket>/<prefix>."
  type        = string
  default     = ""
  validation {
    condition     = !startswith(var.store_prefix, "/") && !endswith(var.store_prefix, "/") && !strcontains(var.store_prefix, "*")
    error_message = "store_prefix must not start or end with \"/\" nor contain \"*\"."
  }
}

variable "object_lock_mode" {
  description = "Default Object Lock retention mode. GOVERNANCE (default, for trials): principals with s3:BypassGovernanceRetention can still remove versions, after the bucket policy is removed. COMPLIANCE: nobody, not even the account root, can remove a version before its retention ends."
  type        = string
  default     = "GOVERNANCE"
  validation {
    condition     = contains(["GOVERNANCE", "COMPLIANCE"], var.object_lock_mode)
    error_message = "object_lock_mode must be GOVERNANCE or COMPLIANCE."
  }
}

variable "retention_days" {
  description = "Default Object Lock retention of every new object version, in days."
  type        = number
  validation {
    condition     = var.retention_days >= 1 && floor(var.retention_days) == var.retention_days
    error_message = "retention_days must be a whole number of days, at least 1."
  }
}

variable "kms_key_arn" {
  description = "KMS key ARN for SSE-KMS of the archive; null (default) creates a key with rotation."
  type        = string
  default     = null
}

variable "kms_key_deletion_window_days" {
  description = "Waiting period before a KMS key made by this module is deleted."
  type        = number
  default     = 30
}

variable "force_destroy" {
  description = "Let `terraform destroy` delete every object version (with the governance bypass). Only for trials in GOVERNANCE mode; in COMPLIANCE mode the bucket cannot be emptied before the retention ends."
  type        = bool
  default     = false
}

variable "abort_incomplete_multipart_days" {
  description = "Days after which the lifecycle rule aborts an incomplete multipart upload."
  type        = number
  default     = 7
}

variable "lifecycle_transition_default_minimum_object_size" {
  description = "transition_default_minimum_object_size of the lifecycle configurations. null: the provider's default (AWS). \"\": send none and wait for none; LocalStack 4.0.3 never returns the header the provider otherwise waits for."
  type        = string
  default     = null
}

variable "access_logging" {
  description = "Server access logging: target bucket and prefix (default \"<bucket>/\"); create_target_bucket makes that bucket here (SSE-S3, versioned, logs expire after log_retention_days). null (default): no access logging."
  type = object({
    target_bucket        = string
    target_prefix        = optional(string)
    create_target_bucket = optional(bool, false)
    log_retention_days   = optional(number, 365)
  })
  default = null
}

variable "replication" {
  description = "Cross-region replication to a second Object Lock bucket, made through the provider alias aws.replica (another region): its name, its own KMS key (null: made there), its retention (null: as the archive's), storage class and optional access logging. Delete markers are not replicated. null (default): no replica."
  type = object({
    bucket_name    = string
    kms_key_arn    = optional(string)
    retention_days = optional(number)
    storage_class  = optional(string, "STANDARD")
    access_logging = optional(object({
      target_bucket        = string
      target_prefix        = optional(string)
      create_target_bucket = optional(bool, false)
      log_retention_days   = optional(number, 365)
    }))
  })
  default = null
}

variable "duty_role_trust_policies" {
  description = "Roles to create, by duty (writer, sealer, auditor): the assume-role (trust) policy JSON of each. A duty left out gets its policy but no role. Default: no roles."
  type        = map(string)
  default     = {}
  validation {
    condition     = alltrue([for k in keys(var.duty_role_trust_policies) : contains(["writer", "sealer", "auditor"], k)])
    error_message = "duty_role_trust_policies keys must be writer, sealer or auditor."
  }
}

variable "duty_principal_arns" {
  description = "Roles made elsewhere that hold a duty policy (e.g. a Batch job role with the writer policy attached): the bucket policy denies them, like the roles made here, any change of the bucket's protection."
  type        = list(string)
  default     = []
}

variable "role_name_prefix" {
  description = "Prefix of the IAM role and policy names; null: the bucket name (cut to 40 characters)."
  type        = string
  default     = null
}

variable "sweep_grant" {
  description = "Also create the optional temps-only delete policy for `lineage sweep` (hidden `.<name>.<nonce>.tmp` keys only; lineage never writes temps to an object store, so only stores copied from a disk can hold any)."
  type        = bool
  default     = false
}

variable "glue" {
  description = "AWS Glue database and table over the Hive layout, with partition projection (run_id injected; target_crs an enum of target_crs_values, or injected when the list is empty), for Athena, Trino and Spark without a crawler; with iceberg_metadata_location (an s3:// URL of a `_iceberg/metadata/v<N>.metadata.json` of this store, as `lineage files --iceberg` prints it), also the Iceberg table iceberg_table_name registered at it. enabled = false skips them (LocalStack has no Glue)."
  type = object({
    enabled                   = optional(bool, true)
    database_name             = optional(string)
    table_name                = optional(string, "lineage_events")
    target_crs_values         = optional(list(string), [])
    iceberg_metadata_location = optional(string)
    iceberg_table_name        = optional(string, "lineage_events_iceberg")
  })
  default = {}
  validation {
    condition     = var.glue.iceberg_metadata_location == null || can(regex("^s3://[^/]+/(.+/)?_iceberg/metadata/v[1-9][0-9]*\\.metadata\\.json$", var.glue.iceberg_metadata_location))
    error_message = "glue.iceberg_metadata_location must be an s3:// URL of a metadata file `seal --iceberg` writes: s3://<bucket>/<prefix>/_iceberg/metadata/v<N>.metadata.json."
  }
}

variable "tags" {
  description = "Tags for every resource that takes them."
  type        = map(string)
  default     = {}
}
