output "bucket" {
  description = "The archive bucket."
  value       = google_storage_bucket.this.name
}

output "store_url" {
  description = "For `lineage --store`."
  value       = "gs://${google_storage_bucket.this.name}"
}
