output "writer" {
  description = "The writer's policy document (JSON)."
  value       = data.aws_iam_policy_document.writer.json
}

output "sealer" {
  description = "The sealer's policy document (JSON)."
  value       = data.aws_iam_policy_document.sealer.json
}

output "auditor" {
  description = "The auditor's policy document (JSON)."
  value       = data.aws_iam_policy_document.auditor.json
}

output "sweep" {
  description = "The temps-only delete grant of `lineage sweep` (JSON)."
  value       = data.aws_iam_policy_document.sweep.json
}
