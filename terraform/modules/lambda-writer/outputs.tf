output "function_name" {
  description = "The Lambda function."
  value       = aws_lambda_function.this.function_name
}

output "function_arn" {
  description = "ARN of the Lambda function."
  value       = aws_lambda_function.this.arn
}

output "role_arn" {
  description = "The function's role: the archive's writer policy, plus reading its trigger and writing its logs."
  value       = aws_iam_role.this.arn
}

output "store_url" {
  description = "The store the function appends to (its LINEAGE_STORE)."
  value       = local.store_url
}

output "log_group" {
  description = "The function's log group: one JSON line per appended, refused or skipped object or message."
  value       = aws_cloudwatch_log_group.this.name
}

output "queue_url" {
  description = "URL of the event queue (send NDJSON bodies here), or null without sqs_trigger."
  value       = try(aws_sqs_queue.events[0].url, null)
}

output "dead_letter_queue_url" {
  description = "URL of the event queue's dead-letter queue (messages the function refused, with the refusal in their attributes, and messages that failed max_receive_count times), or null."
  value       = try(aws_sqs_queue.dead_letter[0].url, null)
}

output "failed_invocations_queue_url" {
  description = "URL of the queue receiving S3-triggered invocations that failed after Lambda's two retries."
  value       = aws_sqs_queue.failed.url
}
