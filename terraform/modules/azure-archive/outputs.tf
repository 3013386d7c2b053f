output "storage_account" {
  description = "The storage account name (AZURE_STORAGE_ACCOUNT_NAME for lineage)."
  value       = azurerm_storage_account.this.name
}

output "store_url" {
  description = "For `lineage --store` (with AZURE_STORAGE_ACCOUNT_NAME set to storage_account)."
  value       = "az://${azurerm_storage_container.this.name}"
}

output "writer_role_definition_id" {
  description = "The create-only writer role."
  value       = azurerm_role_definition.writer.role_definition_resource_id
}
