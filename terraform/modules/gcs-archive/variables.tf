variable "project" {
  description = "Google Cloud project of the bucket."
  type        = string
}

variable "bucket_name" {
  description = "The archive bucket (globally unique); the store URL is gs://<bucket>/<prefix>."
  type        = string
}

variable "location" {
  description = "Bucket location; a dual- or multi-region (e.g. EU, EUR4) keeps a copy in a second region."
  type        = string
  default     = "EU"
}

variable "retention_days" {
  description = "Retention policy: no object can be deleted or replaced until it is this many days old."
  type        = number
}

variable "lock_retention_policy" {
  description = "Lock the retention policy (Bucket Lock; like S3 COMPLIANCE): it can then never be shortened or removed, and the bucket cannot be deleted before every object has aged out. Irreversible; false (default) for trials."
  type        = bool
  default     = false
}

variable "kms_key_name" {
  description = "Cloud KMS key for default encryption (CMEK); null: Google-managed keys."
  type        = string
  default     = null
}

variable "log_bucket" {
  description = "Bucket that receives usage logs; null for none."
  type        = string
  default     = null
}

variable "soft_delete_days" {
  description = "Soft-delete window (0 turns it off; the retention policy already refuses deletes)."
  type        = number
  default     = 7
}

variable "abort_incomplete_multipart_days" {
  description = "Days after which an incomplete XML-API multipart upload is aborted."
  type        = number
  default     = 7
}

variable "writer_members" {
  description = "IAM members (e.g. serviceAccount:job@project.iam.gserviceaccount.com) that run `lineage append` / `seal`: create, get, list; no delete, hence no overwrite."
  type        = list(string)
  default     = []
}

variable "auditor_members" {
  description = "IAM members that run `lineage verify` / `log` / `prove`: get and list only."
  type        = list(string)
  default     = []
}

variable "labels" {
  description = "Labels of the bucket."
  type        = map(string)
  default     = {}
}
