output "store_url" {
  description = "The archive's store URL (`lineage verify --store`)."
  value       = module.archive.store_url
}

output "function_name" {
  description = "The writer function."
  value       = module.writer.function_name
}

output "queue_url" {
  description = "Send NDJSON message bodies here."
  value       = module.writer.queue_url
}

output "dead_letter_queue_url" {
  description = "Refused messages (set aside by the function) and messages that failed max_receive_count times."
  value       = module.writer.dead_letter_queue_url
}

output "log_group" {
  description = "The function's log group (one JSON line per object or message)."
  value       = module.writer.log_group
}
