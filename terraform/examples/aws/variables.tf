variable "bucket_name" {
  description = "The archive bucket (globally unique); access logs go to <bucket_name>-logs."
  type        = string
}

variable "replica_bucket_name" {
  description = "The replica bucket in replica_region; its access logs go to <replica_bucket_name>-logs."
  type        = string
}

variable "region" {
  description = "Region of the archive."
  type        = string
  default     = "eu-central-1"
}

variable "replica_region" {
  description = "Region of the replica (another region than the archive's)."
  type        = string
  default     = "eu-west-1"
}

variable "store_prefix" {
  description = "Key prefix of the store inside the bucket (\"\" for the root)."
  type        = string
  default     = "lineage"
}

variable "object_lock_mode" {
  description = "GOVERNANCE (default: a trial can be torn down with the governance bypass) or COMPLIANCE (production: nobody can remove a version before its retention ends, and the bucket cannot be deleted until then)."
  type        = string
  default     = "GOVERNANCE"
}

variable "retention_days" {
  description = "Default retention of every object version, in days."
  type        = number
  default     = 365
}

variable "force_destroy" {
  description = "Let `terraform destroy` empty the buckets (GOVERNANCE only). Leave false in production."
  type        = bool
  default     = false
}

variable "duty_role_trust_policies" {
  description = "Roles to create by duty (writer, sealer, auditor) with their trust policy JSON, e.g. the Batch or EKS service that runs `lineage append`."
  type        = map(string)
  default     = {}
}

variable "duty_principal_arns" {
  description = "Existing roles you attach duty policies to: the bucket policy denies them any change of the bucket's protection."
  type        = list(string)
  default     = []
}

variable "target_crs_values" {
  description = "The target CRSs of the partition projection enum (EPSG:<code>); [] makes target_crs injected (every query then names it)."
  type        = list(string)
  default     = ["EPSG:4326", "EPSG:3857", "EPSG:25832", "EPSG:25833", "EPSG:3035"]
}

variable "tags" {
  description = "Default tags of every resource."
  type        = map(string)
  default     = { project = "lineage-store" }
}

variable "iceberg_metadata_location" {
  description = "The store's newest Iceberg metadata file (`lineage files --iceberg` after `lineage seal --iceberg`), e.g. s3://<bucket>/lineage/_iceberg/metadata/v12.metadata.json: the Glue Iceberg table is registered at it. null: no Iceberg table."
  type        = string
  default     = null
}
