variable "function_name" {
  description = "Name of the Lambda function (also of its role, log group and queues)."
  type        = string
  default     = "lineage-writer"
}

variable "archive_bucket" {
  description = "The archive's bucket (the s3-archive module's `bucket` output)."
  type        = string
}

variable "store_prefix" {
  description = "Key prefix of the store inside the archive bucket, as given to the s3-archive module (\"\" for the bucket root). The function gets LINEAGE_STORE=s3://<archive_bucket>/<store_prefix>."
  type        = string
  default     = ""
  validation {
    condition     = !startswith(var.store_prefix, "/") && !endswith(var.store_prefix, "/")
    error_message = "store_prefix must not start or end with \"/\"."
  }
}

variable "writer_policy_arn" {
  description = "The archive's writer policy (the s3-archive module's `policy_arns[\"writer\"]`): create-only puts of parts, pointers, index entries, commit-key claims and the store identity, reads of them, the archive's KMS key. The function's role gets this and only what its trigger and logs need."
  type        = string
}

variable "package" {
  description = "The code: `zip` = path of the zip built by `scripts/dist.sh` (dist/lambda-writer.zip: handler.py + the manylinux2014 wheel unpacked), or `image_uri` = an ECR image built from examples/lambda/Dockerfile. Exactly one."
  type = object({
    zip       = optional(string)
    image_uri = optional(string)
  })
  validation {
    condition     = (var.package.zip == null) != (var.package.image_uri == null)
    error_message = "package needs exactly one of zip and image_uri."
  }
}

variable "architecture" {
  description = "x86_64 (what scripts/dist.sh builds here) or arm64 (Graviton; build the aarch64 artefacts as docs/deploy.md says)."
  type        = string
  default     = "x86_64"
  validation {
    condition     = contains(["x86_64", "arm64"], var.architecture)
    error_message = "architecture must be x86_64 or arm64."
  }
}

variable "runtime" {
  description = "Python runtime of the zip package (the wheel is abi3: any CPython >= 3.9)."
  type        = string
  default     = "python3.12"
}

variable "memory_size" {
  description = "Memory in MB. docs/deploy.md (Sizing for Lambda) measured the handler's peak RSS: 128-143 MiB for a 100 k-event object, 410-429 MiB for 1 M events at the default batch_rows, so 1024 covers objects up to 1 M events with 2.4 times headroom; more memory also buys CPU (1769 MB = one vCPU)."
  type        = number
  default     = 1024
}

variable "ephemeral_storage_mb" {
  description = "Size of /tmp in MB (512-10240): each S3 object is spooled there once (NDJSON: 418 MB for the million events of docs/deploy.md's sizing; Parquet: about 50 MB)."
  type        = number
  default     = 2048
}

variable "timeout_seconds" {
  description = "Function timeout. docs/deploy.md (Sizing for Lambda): a 1 M-event object took 40.8-44.6 CPU-seconds (unoptimised build, an upper bound), about 80 s at 1024 MB's 0.58 vCPU plus the S3 transfer; 300 s leaves more than half spare."
  type        = number
  default     = 300
}

variable "batch_rows" {
  description = "Rows per Parquet part (LINEAGE_BATCH_ROWS); null: the library's default (100000)."
  type        = number
  default     = null
}

variable "reserved_concurrency" {
  description = "Reserved concurrent executions: an upper bound on parallel writers (each flush is its own create-only commit, so any number is safe; this bounds cost and request rate)."
  type        = number
  default     = 50
}

variable "s3_trigger" {
  description = "Invoke the function for every object created in this bucket under `prefix` whose key ends with one of `suffixes`. This module then owns the bucket's notification configuration (aws_s3_bucket_notification replaces any other). null: no S3 trigger."
  type = object({
    bucket   = string
    prefix   = optional(string, "")
    suffixes = optional(list(string), [".ndjson", ".jsonl", ".csv", ".parquet"])
  })
  default = null
}

variable "sqs_trigger" {
  description = "Make a queue (and its dead-letter queue) whose messages (NDJSON bodies) the function appends. A refused message (bad input) is sent to the dead-letter queue by the function itself (LINEAGE_REFUSED_QUEUE_URL) and not retried; a message that fails otherwise (store unreachable) is reported in batchItemFailures and moves to the dead-letter queue after `max_receive_count` receives. null: no queue."
  type = object({
    batch_size                         = optional(number, 10)
    maximum_batching_window_in_seconds = optional(number, 0)
    max_receive_count                  = optional(number, 3)
    message_retention_seconds          = optional(number, 1209600)
  })
  default = null
}

variable "kms_key_arn" {
  description = "Customer-managed KMS key for the function's environment, log group and queues; null: one is made here (with rotation)."
  type        = string
  default     = null
}

variable "log_retention_days" {
  description = "Retention of the function's log group (the refused-input records are there)."
  type        = number
  default     = 365
}

variable "subnet_ids" {
  description = "Run the function in these VPC subnets (with security_group_ids); the archive is then reached through an S3 gateway endpoint. Empty (default): outside a VPC."
  type        = list(string)
  default     = []
}

variable "security_group_ids" {
  description = "Security groups of the function when subnet_ids is set."
  type        = list(string)
  default     = []
}

variable "code_signing_config_arn" {
  description = "An AWS Signer code-signing configuration to enforce on the zip package; null: none."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags for every resource made here."
  type        = map(string)
  default     = {}
}
