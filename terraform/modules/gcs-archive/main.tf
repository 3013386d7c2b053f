# A write-once lineage archive on Google Cloud Storage: a retention policy (optionally
# locked), uniform bucket-level access, public access prevention, optional CMEK and usage
# logs, and create-only writer / read-only auditor bindings. Checked statically only (no
# google provider on this project's machines).

resource "google_storage_bucket" "this" {
  # checkov:skip=CKV_GCP_78:Object Versioning and retention policies are mutually exclusive on GCS; the retention policy is what protects the history.
  name                        = var.bucket_name
  project                     = var.project
  location                    = var.location
  storage_class               = "STANDARD"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  # Nothing can be deleted or replaced before it is retention_days old (GCS replaces an
  # object by deleting the old one, which the policy refuses).
  retention_policy {
    retention_period = var.retention_days * 86400
    is_locked        = var.lock_retention_policy
  }

  soft_delete_policy {
    retention_duration_seconds = var.soft_delete_days * 86400
  }

  lifecycle_rule {
    condition {
      age = var.abort_incomplete_multipart_days
    }
    action {
      type = "AbortIncompleteMultipartUpload"
    }
  }

  dynamic "encryption" {
    for_each = var.kms_key_name == null ? [] : [1]
    content {
      default_kms_key_name = var.kms_key_name
    }
  }

  dynamic "logging" {
    for_each = var.log_bucket == null ? [] : [1]
    content {
      log_bucket        = var.log_bucket
      log_object_prefix = var.bucket_name
    }
  }

  labels = var.labels
}

# objectCreator + objectViewer are exactly create, get and list: without
# storage.objects.delete a client cannot overwrite either (GCS requires it to replace an
# object), so create-only is the service's rule, not only lineage's precondition.
resource "google_storage_bucket_iam_member" "writer_create" {
  for_each = toset(var.writer_members)
  bucket   = google_storage_bucket.this.name
  role     = "roles/storage.objectCreator"
  member   = each.value
}

resource "google_storage_bucket_iam_member" "writer_read" {
  for_each = toset(var.writer_members)
  bucket   = google_storage_bucket.this.name
  role     = "roles/storage.objectViewer"
  member   = each.value
}

resource "google_storage_bucket_iam_member" "auditor" {
  for_each = toset(var.auditor_members)
  bucket   = google_storage_bucket.this.name
  role     = "roles/storage.objectViewer"
  member   = each.value
}
