# A write-once lineage archive on Azure Blob Storage: version-level immutability (a
# time-based retention policy on every blob version), versioning, no shared-key access
# (Entra ID only), TLS 1.2, a firewall, and create-only writer / read-only auditor role
# assignments. Checked statically only (no azurerm provider on this project's machines).
# The provider must set `storage_use_azuread = true`: shared keys are disabled.

resource "azurerm_storage_account" "this" {
  # checkov:skip=CKV2_AZURE_33:A private endpoint needs the deployer's VNet and DNS zone; the firewall (network_rules, default Deny) limits access meanwhile.
  # checkov:skip=CKV_AZURE_33:Queue service logging: this account serves blobs only, no queues.
  name                     = var.storage_account_name
  resource_group_name      = var.resource_group_name
  location                 = var.location
  account_kind             = "StorageV2"
  account_tier             = "Standard"
  account_replication_type = var.replication_type
  # Entra ID only: no account keys, no key-signed SAS, so no identity can bypass RBAC.
  shared_access_key_enabled       = false
  default_to_oauth_authentication = true
  local_user_enabled              = false
  https_traffic_only_enabled      = true
  min_tls_version                 = "TLS1_2"
  allow_nested_items_to_be_public = false
  # Private endpoints only, unless firewall exceptions are given (service endpoints and IP
  # rules reach the public endpoint, through the firewall).
  public_network_access_enabled     = length(var.allowed_ip_rules) + length(var.allowed_subnet_ids) > 0
  cross_tenant_replication_enabled  = false
  infrastructure_encryption_enabled = true

  # Version-level immutability for every container: each blob version is write-once for
  # retention_days. Unlocked ~ S3 GOVERNANCE, Locked ~ S3 COMPLIANCE.
  immutability_policy {
    state                         = var.immutability_state
    period_since_creation_in_days = var.retention_days
    allow_protected_append_writes = false
  }

  blob_properties {
    versioning_enabled  = true
    change_feed_enabled = true
    delete_retention_policy {
      days = var.soft_delete_days
    }
    container_delete_retention_policy {
      days = var.soft_delete_days
    }
  }

  network_rules {
    default_action             = "Deny"
    bypass                     = ["AzureServices"]
    ip_rules                   = var.allowed_ip_rules
    virtual_network_subnet_ids = var.allowed_subnet_ids
  }

  sas_policy {
    expiration_period = "01.00:00:00"
    expiration_action = "Block"
  }

  dynamic "identity" {
    for_each = var.customer_managed_key == null ? [] : [1]
    content {
      type         = "UserAssigned"
      identity_ids = [var.customer_managed_key.user_assigned_identity_id]
    }
  }

  dynamic "customer_managed_key" {
    for_each = var.customer_managed_key == null ? [] : [1]
    content {
      key_vault_key_id          = var.customer_managed_key.key_vault_key_id
      user_assigned_identity_id = var.customer_managed_key.user_assigned_identity_id
    }
  }

  tags = var.tags
}

resource "azurerm_storage_container" "this" {
  # checkov:skip=CKV2_AZURE_21:Blob read/write/delete logs go through Azure Monitor (azurerm_monitor_diagnostic_setting.blob, with log_analytics_workspace_id); checkov only recognises the legacy storage insights.
  name                  = var.container_name
  storage_account_id    = azurerm_storage_account.this.id
  container_access_type = "private"
}

resource "azurerm_monitor_diagnostic_setting" "blob" {
  count                      = var.log_analytics_workspace_id == null ? 0 : 1
  name                       = "lineage-archive-blob-logs"
  target_resource_id         = "${azurerm_storage_account.this.id}/blobServices/default"
  log_analytics_workspace_id = var.log_analytics_workspace_id
  enabled_log {
    category = "StorageRead"
  }
  enabled_log {
    category = "StorageWrite"
  }
  enabled_log {
    category = "StorageDelete"
  }
}

# Create-only writer: read, list and *add* (create a new blob) but not blobs/write, which
# Azure requires to overwrite an existing blob, and no delete. lineage sends
# If-None-Match: * on every create anyway; this makes the refusal the service's.
resource "azurerm_role_definition" "writer" {
  name        = "lineage-archive-writer-${var.storage_account_name}"
  scope       = azurerm_storage_account.this.id
  description = "lineage-store writer of ${var.storage_account_name}/${var.container_name}: read, list, create; no overwrite, no delete"
  permissions {
    actions = ["Microsoft.Storage/storageAccounts/blobServices/containers/read"]
    data_actions = [
      "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read",
      "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/add/action",
    ]
  }
  assignable_scopes = [azurerm_storage_account.this.id]
}

resource "azurerm_role_assignment" "writer" {
  for_each           = toset(var.writer_principal_ids)
  scope              = azurerm_storage_container.this.id
  role_definition_id = azurerm_role_definition.writer.role_definition_resource_id
  principal_id       = each.value
}

resource "azurerm_role_assignment" "auditor" {
  for_each             = toset(var.auditor_principal_ids)
  scope                = azurerm_storage_container.this.id
  role_definition_name = "Storage Blob Data Reader"
  principal_id         = each.value
}
