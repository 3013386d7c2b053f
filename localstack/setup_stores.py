"""Create the test buckets and containers on the emulators named in the environment.

Run by localstack/start.sh with the moto venv's Python (boto3, azure-storage-blob).
Idempotent: an existing bucket or container is fine.
"""

import os
import sys
import time

import boto3
from botocore.config import Config


def s3_buckets(endpoint: str, default_retention: bool = False) -> None:
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 10}),
    )
    have = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if os.environ["LINEAGE_S3_BUCKET"] not in have:
        s3.create_bucket(Bucket=os.environ["LINEAGE_S3_BUCKET"])
    lock = os.environ["LINEAGE_S3_LOCK_BUCKET"]
    if lock not in have:
        # Object Lock buckets demand an integrity checksum on every upload (on AWS).
        s3.create_bucket(Bucket=lock, ObjectLockEnabledForBucket=True)
        if default_retention:
            # A default retention, as an archive's bucket has: every new object version is
            # locked in COMPLIANCE mode (this server's data directory is new every run).
            s3.put_object_lock_configuration(
                Bucket=lock,
                ObjectLockConfiguration={
                    "ObjectLockEnabled": "Enabled",
                    "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 1}},
                },
            )
    # A first write, retried until the volume servers have joined (SeaweedFS answers S3
    # before it can store anything).
    deadline = time.monotonic() + 120
    while True:
        try:
            s3.put_object(Bucket=os.environ["LINEAGE_S3_BUCKET"], Key="_probe/ready", Body=b"")
            s3.delete_object(Bucket=os.environ["LINEAGE_S3_BUCKET"], Key="_probe/ready")
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def azure_container(blob_url: str) -> None:
    from azure.core.exceptions import ResourceExistsError
    from azure.storage.blob import BlobServiceClient

    # Azurite's documented well-known development account (not a secret).
    conn = (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
        "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
        f"BlobEndpoint={blob_url}/devstoreaccount1;"
    )
    svc = BlobServiceClient.from_connection_string(conn)
    try:
        svc.create_container(os.environ["LINEAGE_AZURE_CONTAINER"])
    except ResourceExistsError:
        pass


def main() -> int:
    for var in ("LINEAGE_LOCALSTACK_ENDPOINT", "LINEAGE_MOTO_ENDPOINT"):
        if os.environ.get(var):
            s3_buckets(os.environ[var])
    if os.environ.get("LINEAGE_SEAWEEDFS_ENDPOINT"):
        s3_buckets(os.environ["LINEAGE_SEAWEEDFS_ENDPOINT"], default_retention=True)
    if os.environ.get("LINEAGE_AZURITE_BLOB_URL"):
        azure_container(os.environ["LINEAGE_AZURITE_BLOB_URL"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
