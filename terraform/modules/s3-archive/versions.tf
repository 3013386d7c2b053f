terraform {
  required_version = ">= 1.5.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.100.0, < 6.0.0"
      # aws.replica: the region of the replica bucket. Pass `aws.replica = aws` when
      # `replication` is null (it is then never used).
      configuration_aliases = [aws.replica]
    }
  }
}
