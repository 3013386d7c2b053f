terraform {
  required_version = ">= 1.5.0"
  required_providers {
    # Not installed on this project's machines: this module is checked statically only
    # (terraform fmt and checkov; see terraform/README.md).
    azurerm = {
      source  = "hashicorp/azurerm"
      version = ">= 4.9.0, < 5.0.0"
    }
  }
}
