variable "resource_group_name" {
  description = "Existing resource group of the storage account."
  type        = string
}

variable "location" {
  description = "Azure region of the storage account."
  type        = string
}

variable "storage_account_name" {
  description = "Storage account name (3-24 lowercase letters and digits, globally unique)."
  type        = string
}

variable "container_name" {
  description = "Container of the lineage store (the store URL is az://<container>/<prefix>)."
  type        = string
  default     = "lineage"
}

variable "replication_type" {
  description = "Account replication: GZRS/RAGZRS (default) keep a copy in the paired region."
  type        = string
  default     = "RAGZRS"
}

variable "retention_days" {
  description = "Version-level immutability: every blob version is immutable for this many days after it is created."
  type        = number
}

variable "immutability_state" {
  description = "Unlocked (default, for trials: the period can still be shortened or the policy disabled) or Locked (the period can only grow; like S3 COMPLIANCE). Locking cannot be undone."
  type        = string
  default     = "Unlocked"
  validation {
    condition     = contains(["Unlocked", "Locked"], var.immutability_state)
    error_message = "immutability_state must be Unlocked or Locked."
  }
}

variable "soft_delete_days" {
  description = "Soft-delete retention of blobs and containers."
  type        = number
  default     = 30
}

variable "allowed_subnet_ids" {
  description = "Subnets allowed through the account firewall (the firewall denies everything else)."
  type        = list(string)
  default     = []
}

variable "allowed_ip_rules" {
  description = "Public IPs or CIDR ranges allowed through the account firewall."
  type        = list(string)
  default     = []
}

variable "customer_managed_key" {
  description = "Encrypt with a key of yours: a Key Vault key id and a user-assigned identity that may use it. null: Microsoft-managed keys (plus infrastructure encryption)."
  type = object({
    key_vault_key_id          = string
    user_assigned_identity_id = string
  })
  default = null
}

variable "log_analytics_workspace_id" {
  description = "Send the blob service's read, write and delete logs to this Log Analytics workspace; null for none."
  type        = string
  default     = null
}

variable "writer_principal_ids" {
  description = "Object ids of the identities that run `lineage append` / `seal` (read, create, list; no delete)."
  type        = list(string)
  default     = []
}

variable "auditor_principal_ids" {
  description = "Object ids of the identities that run `lineage verify` / `log` / `prove` (read and list only)."
  type        = list(string)
  default     = []
}

variable "tags" {
  description = "Tags of the storage account."
  type        = map(string)
  default     = {}
}
