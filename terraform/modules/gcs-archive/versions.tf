terraform {
  required_version = ">= 1.5.0"
  required_providers {
    # Not installed on this project's machines: this module is checked statically only
    # (terraform fmt and checkov; see terraform/README.md).
    google = {
      source  = "hashicorp/google"
      version = ">= 5.0.0, < 7.0.0"
    }
  }
}
