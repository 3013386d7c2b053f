"""terraform/: fmt, init from the local provider mirror, validate, checkov, and the
s3-archive module applied to LocalStack, written to by `lineage`, read back with boto3,
its bucket policy evaluated statement by statement, then destroyed.

Run by scripts/test.sh (LocalStack started with SERVICES=s3,kms,iam,sts; checkov in
.venv-checkov). Without terraform on PATH (or with LINEAGE_NO_TERRAFORM=1) the terraform
tests skip, saying why; checkov needs no terraform and always runs.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from iam_eval import Request, decide, statements
from test_interop import event, lineage, ndjson

REPO = Path(__file__).resolve().parents[2]
TF_SRC = REPO / "terraform"
EXAMPLES = sorted(p.name for p in (TF_SRC / "examples").iterdir() if p.is_dir())
# Where machines of this project's kind keep the hashicorp/aws provider (a filesystem
# mirror: registry.terraform.io/hashicorp/aws/<version>/<os_arch>/).
MIRROR_CANDIDATES = ["/opt/tf-plugins", "/usr/local/share/terraform/plugins",
                     "/usr/share/terraform/plugins", "~/.terraform.d/plugins",
                     "~/.local/share/terraform/plugins"]
APPLY_TIMEOUT = 1200

APPLIED = ("applied to LocalStack and read back: bucket with Object Lock (GOVERNANCE, 1 day), "
           "versioning, SSE-KMS with its own key, bucket-owner-enforced ownership, public access "
           "block, lifecycle rule, access logging (+ log bucket), bucket policy (stored but not "
           "enforced by LocalStack: evaluated as JSON), IAM duty policies, roles, sweep grant")
VALIDATED_ONLY = ("validated only (examples/aws): Glue database + table with partition projection "
                  "(LocalStack's community edition has no Glue), cross-region replication "
                  "(LocalStack stores replication configurations but replicates nothing); "
                  "modules/azure-archive and modules/gcs-archive: fmt + checkov only (no azurerm "
                  "or google provider on this machine); examples/lambda with modules/lambda-writer: "
                  "init + validate + checkov only (LocalStack runs Lambda functions in Docker, which "
                  "this machine has not; the handler is tested in-process by test_lambda.py)")


def say(config: pytest.Config, message: str) -> None:
    """Print past pytest's capture: the test command's output names what was skipped or
    only validated."""
    with config.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
        print(f"\ntest_terraform: {message}", flush=True)


def find_mirror() -> Path | None:
    given = os.environ.get("LINEAGE_TF_PROVIDER_MIRROR")
    for c in [given] if given else MIRROR_CANDIDATES:
        path = Path(c).expanduser()
        if (path / "registry.terraform.io/hashicorp/aws").is_dir():
            return path
    return None


@dataclass
class Terraform:
    workdir: Path  # a copy of terraform/, so no state or .terraform lands in the tree
    env: dict[str, str]

    def run(self, where: str, *args: str, check: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
        cmd = ["terraform", f"-chdir={self.workdir / where}", *args]
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check:
            assert r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
        return r


@pytest.fixture(scope="module")
def tf(tmp_path_factory, pytestconfig) -> Terraform:
    if os.environ.get("LINEAGE_NO_TERRAFORM") == "1":
        say(pytestconfig, "terraform tests skipped: LINEAGE_NO_TERRAFORM=1")
        pytest.skip("LINEAGE_NO_TERRAFORM=1")
    if not shutil.which("terraform"):
        reason = "terraform is not on PATH; fmt/init/validate/apply of terraform/ skipped (checkov still runs)"
        say(pytestconfig, reason)
        pytest.skip(reason)
    mirror = find_mirror()
    assert mirror, ("terraform is installed but no hashicorp/aws filesystem mirror was found in "
                    f"{MIRROR_CANDIDATES}; set LINEAGE_TF_PROVIDER_MIRROR (or LINEAGE_NO_TERRAFORM=1)")
    work = tmp_path_factory.mktemp("tf") / "terraform"
    shutil.copytree(TF_SRC, work, ignore=shutil.ignore_patterns(".terraform", "*.tfstate*", ".terraform.lock.hcl"))
    rc = work.parent / "terraform.rc"
    # Only the mirror: terraform can download nothing.
    rc.write_text(
        "disable_checkpoint = true\n"
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path    = "{mirror}"\n'
        '    include = ["registry.terraform.io/hashicorp/aws"]\n  }\n}\n'
    )
    env = {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "TF_IN_AUTOMATION": "1", "TF_INPUT": "0",
           "CHECKPOINT_DISABLE": "1"}
    return Terraform(work, env)


_initialised: set[str] = set()


def initialised(tf: Terraform, example: str) -> str:
    where = f"examples/{example}"
    if where not in _initialised:
        tf.run(where, "init", "-input=false", "-no-color")
        _initialised.add(where)
    return where


def test_fmt_check_recursive(tf: Terraform) -> None:
    r = tf.run(".", "fmt", "-check", "-recursive", "-diff", "-no-color", check=False)
    assert r.returncode == 0, f"terraform fmt would change:\n{r.stdout}{r.stderr}"


@pytest.mark.parametrize("example", EXAMPLES)
def test_init_from_mirror_and_validate(tf: Terraform, example: str) -> None:
    where = initialised(tf, example)
    lock = (tf.workdir / where / ".terraform.lock.hcl").read_text()
    assert 'provider "registry.terraform.io/hashicorp/aws"' in lock
    r = tf.run(where, "validate", "-json", "-no-color")
    report = json.loads(r.stdout)
    assert report["valid"] and report["error_count"] == 0, report


# --- checkov ----------------------------------------------------------------------------

SKIP_COMMENT = re.compile(r"#\s*checkov:skip=([A-Z0-9_]+):(.*)")


def test_checkov_passes_with_every_skip_justified() -> None:
    checkov = os.environ.get("LINEAGE_CHECKOV") or str(REPO / ".venv-checkov/bin/checkov")
    assert Path(checkov).exists(), (f"checkov not found at {checkov}: scripts/test.sh installs it "
                                    "(scripts/python-env.sh .venv-checkov terraform/checkov-requirements.txt)")
    r = subprocess.run([checkov, "-d", str(TF_SRC), "--framework", "terraform", "--skip-download",
                        "-o", "json"], capture_output=True, text=True, timeout=900)
    assert r.stdout.strip(), f"checkov printed no report (exit {r.returncode}):\n{r.stderr[-4000:]}"
    report = json.loads(r.stdout)
    results, summary = report["results"], report["summary"]
    failed = [f"{c['check_id']} {c['resource']} {c['file_path']}:{c['file_line_range']}"
              for c in results["failed_checks"]]
    assert not failed and summary["failed"] == 0, "checkov failures:\n" + "\n".join(failed)
    assert summary["parsing_errors"] == 0, summary
    assert r.returncode == 0, r.stderr[-2000:]
    # Every module was scanned.
    scanned = {c["file_path"] for c in results["passed_checks"]}
    for module in ("s3-archive", "azure-archive", "gcs-archive", "lambda-writer"):
        assert any(f"/modules/{module}/" in p for p in scanned), (module, scanned)
    # Every skip is named and justified in place, and none is stale.
    written = {}
    for path in TF_SRC.rglob("*.tf"):
        for m in SKIP_COMMENT.finditer(path.read_text()):
            assert len(m.group(2).strip()) > 20, f"{path}: {m.group(1)} skipped without a justification"
            written[m.group(1)] = path
    used = {c["check_id"] for c in results["skipped_checks"]}
    assert set(written) == used, f"skips written but never used: {set(written) - used}; used: {used}"


# --- examples/localstack applied into LocalStack --------------------------------------------

@dataclass
class Archive:
    where: str
    variables: list[str]
    bucket: str
    endpoint: str
    outputs: dict
    resources: dict[str, dict]  # state: address -> values
    destroyed: bool = False

    def out(self, name: str):
        # `terraform output -json` leaves out null outputs.
        return self.outputs.get(name, {}).get("value")

    def client(self, service: str):
        return boto3.client(service, endpoint_url=self.endpoint, region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"}))


def state_resources(module: dict) -> dict[str, dict]:
    found = {r["address"]: r["values"] for r in module.get("resources", [])}
    for child in module.get("child_modules", []):
        found.update(state_resources(child))
    return found


@pytest.fixture(scope="module")
def archive(tf: Terraform, pytestconfig):
    if os.environ.get("LINEAGE_NO_LOCALSTACK") == "1":
        say(pytestconfig, "apply of examples/localstack skipped: LINEAGE_NO_LOCALSTACK=1")
        pytest.skip("LINEAGE_NO_LOCALSTACK=1")
    endpoint = os.environ.get("LINEAGE_LOCALSTACK_ENDPOINT")
    assert endpoint, "LINEAGE_LOCALSTACK_ENDPOINT is not set: run localstack/start.sh (scripts/test.sh does)"
    where = initialised(tf, "localstack")
    bucket = f"lineage-tf-{secrets.token_hex(6)}"
    # Exactly the example's three variables: nothing else is needed in a fresh LocalStack.
    variables = ["-var", f"bucket_name={bucket}", "-var", "region=us-east-1", "-var", f"endpoint={endpoint}"]
    a = None
    try:
        tf.run(where, "apply", "-auto-approve", "-no-color", *variables, timeout=APPLY_TIMEOUT)
        outputs = json.loads(tf.run(where, "output", "-json").stdout)
        state = json.loads(tf.run(where, "show", "-json", "-no-color").stdout)
        a = Archive(where, variables, bucket, endpoint, outputs, state_resources(state["values"]["root_module"]))
        say(pytestconfig, f"{APPLIED}; {VALIDATED_ONLY}")
        yield a
    finally:
        if a is None or not a.destroyed:  # apply or a test failed before test_destroy: clean up
            tf.run(where, "destroy", "-auto-approve", "-refresh=false", "-no-color", *variables,
                   check=False, timeout=APPLY_TIMEOUT)


def test_store_url_and_outputs(archive: Archive) -> None:
    assert archive.out("store_url") == f"s3://{archive.bucket}"
    assert archive.out("bucket") == archive.bucket
    assert archive.out("glue_table") is None
    assert set(archive.out("policy_arns")) == {"writer", "sealer", "auditor", "sweep"}
    assert set(archive.out("role_arns")) == {"writer", "sealer", "auditor"}
    types = {addr.split("[")[0].rsplit(".", 1)[0].rsplit(".", 1)[-1] for addr in archive.resources}
    assert "aws_s3_bucket_object_lock_configuration" in types and "aws_iam_role" in types, types
    assert not {t for t in types if t.startswith("aws_glue") or "replication" in t}, types


def test_lineage_appends_seals_and_verifies_on_the_terraform_bucket(archive: Archive) -> None:
    store, endpoint = archive.out("store_url"), ["--endpoint-url", archive.endpoint]
    rows = [event(i, f"run-{i % 2}", "EPSG:4326" if i % 3 else "EPSG:25832") for i in range(300)]
    r = lineage("append", "--store", store, *endpoint, "--json", "--batch-rows", "50", stdin=ndjson(rows))
    assert r.returncode == 0, r.stderr.decode()
    pointers = [json.loads(line) for line in r.stdout.decode().splitlines()]
    # (run, crs) groups of 50, 100, 50 and 100 rows, at most 50 rows a part.
    assert sum(p["row_count"] for p in pointers) == 300 and len(pointers) == 6
    r = lineage("seal", "--store", store, *endpoint)
    assert r.returncode == 0, r.stderr.decode()
    head = re.search(r"^head ([0-9a-f]{64})$", r.stdout.decode(), re.M).group(1)
    r = lineage("verify", "--store", store, *endpoint, "--json", "--expect-head", head)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    report = json.loads(r.stdout)
    assert (report["commits"], report["parts_ok"], report["rows"], report["problems"]) == (6, 6, 300, [])

    # Every object lineage wrote got the bucket's defaults: SSE-KMS with the module's key
    # and the GOVERNANCE retention.
    s3 = archive.client("s3")
    keys = [p["part_path"] for p in pointers] + [f"_lineage/commits/run_id={p['run_id']}/{p['commit_id']}.json"
                                                 for p in pointers] + ["_lineage/seals/00000000000000000001.json"]
    tomorrow = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
    for key in keys:
        h = s3.head_object(Bucket=archive.bucket, Key=key)
        assert (h["ServerSideEncryption"], h["SSEKMSKeyId"]) == ("aws:kms", archive.out("kms_key_arn")), key
        assert h["ObjectLockMode"] == "GOVERNANCE", key
        assert abs((h["ObjectLockRetainUntilDate"] - tomorrow).total_seconds()) < 3600, key
    # The lock holds: a version cannot be deleted, and a second create is refused.
    version = s3.head_object(Bucket=archive.bucket, Key=keys[0])["VersionId"]
    with pytest.raises(ClientError, match="AccessDenied"):
        s3.delete_object(Bucket=archive.bucket, Key=keys[0], VersionId=version)
    with pytest.raises(ClientError, match="PreconditionFailed"):
        s3.put_object(Bucket=archive.bucket, Key=keys[0], Body=b"overwrite", IfNoneMatch="*")
    r = lineage("verify", "--store", store, *endpoint, "--expect-head", head)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()


EXPECTED_SIDS = ["DenyInsecureTransport", "DenyPutWithoutIfNoneMatch", "DenyDeleteExceptTemps",
                 "DenyProtectionChangesByDutyRoles"]


def test_bucket_settings_read_back(archive: Archive) -> None:
    s3, b = archive.client("s3"), archive.bucket
    lock = s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
    assert lock == {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    [sse] = s3.get_bucket_encryption(Bucket=b)["ServerSideEncryptionConfiguration"]["Rules"]
    assert sse["ApplyServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms",
                                                         "KMSMasterKeyID": archive.out("kms_key_arn")}
    assert sse["BucketKeyEnabled"] is True
    key = archive.client("kms").describe_key(KeyId=archive.out("kms_key_arn"))["KeyMetadata"]
    assert key["KeyState"] == "Enabled"
    assert archive.client("kms").get_key_rotation_status(KeyId=key["KeyId"])["KeyRotationEnabled"]
    [rule] = s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    assert rule["Status"] == "Enabled" and rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7}
    assert s3.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"] == [
        {"ObjectOwnership": "BucketOwnerEnforced"}]
    assert all(s3.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"].values())
    assert s3.get_bucket_logging(Bucket=b)["LoggingEnabled"] == {"TargetBucket": f"{b}-logs", "TargetPrefix": f"{b}/"}
    stored = json.loads(s3.get_bucket_policy(Bucket=b)["Policy"])
    assert stored == json.loads(archive.out("bucket_policy_json"))
    assert [st["Sid"] for st in statements(stored)] == EXPECTED_SIDS


def test_duty_roles_hold_their_policies(archive: Archive) -> None:
    iam = archive.client("iam")
    for duty, role_arn in archive.out("role_arns").items():
        role = iam.get_role(RoleName=role_arn.rsplit("/", 1)[1])["Role"]
        assert role["Arn"] == role_arn
        attached = iam.list_attached_role_policies(RoleName=role["RoleName"])["AttachedPolicies"]
        assert [p["PolicyArn"] for p in attached] == [archive.out("policy_arns")[duty]]
    for duty, arn in archive.out("policy_arns").items():
        policy = iam.get_policy(PolicyArn=arn)["Policy"]
        doc = iam.get_policy_version(PolicyArn=arn, VersionId=policy["DefaultVersionId"])["PolicyVersion"]["Document"]
        doc = json.loads(doc) if isinstance(doc, str) else doc
        assert doc == json.loads(duty_policy(archive, duty)), duty


def duty_policy(archive: Archive, duty: str) -> str:
    address = ("module.archive.aws_iam_policy.sweep[0]" if duty == "sweep"
               else f'module.archive.aws_iam_policy.duty["{duty}"]')
    return archive.resources[address]["policy"]


def test_bucket_policy_semantics_statement_by_statement(archive: Archive) -> None:
    """What AWS would decide (LocalStack enforces no bucket policy): create-only, no
    deletes, TLS only, and duty roles cannot loosen any of it, even with s3:* attached."""
    bucket_policy = archive.out("bucket_policy_json")
    by_sid = {st["Sid"]: st for st in statements(bucket_policy)}
    assert list(by_sid) == EXPECTED_SIDS
    assert by_sid["DenyPutWithoutIfNoneMatch"]["Condition"] == {
        "Null": {"s3:if-none-match": "true"}, "Bool": {"s3:ObjectCreationOperation": "true"}}
    assert by_sid["DenyInsecureTransport"]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}

    roles, arn = archive.out("role_arns"), f"arn:aws:s3:::{archive.bucket}"
    writer, sealer, auditor = (duty_policy(archive, d) for d in ("writer", "sealer", "auditor"))
    everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:*", "kms:*"], "Resource": "*"}]}
    admin = "arn:aws:iam::000000000000:role/admin"
    principals = {  # name -> (principal ARN, identity policies)
        "writer": (roles["writer"], [writer]),
        "writer with s3:* attached by mistake": (roles["writer"], [writer, everything]),
        "sealer": (roles["sealer"], [sealer]),
        "auditor": (roles["auditor"], [auditor]),
        "sweeper": (admin.replace("admin", "sweeper"), [auditor, duty_policy(archive, "sweep")]),
        "admin": (admin, [everything]),
    }
    part = f"{arn}/run_id=r1/target_crs=EPSG:4326/part-0.parquet"
    pointer = f"{arn}/_lineage/commits/run_id=r1/0.json"
    claim = f"{arn}/_lineage/commit-keys/0.json"
    seal = f"{arn}/_lineage/seals/00000000000000000002.json"
    version = f"{arn}/_delta_log/00000000000000000002.json"
    tile = f"{arn}/_lineage/tiles/0/000"
    iceberg = f"{arn}/_iceberg/metadata/v2.metadata.json"
    temp = f"{arn}/run_id=r1/target_crs=EPSG:4326/.part-0.parquet.0123456789ab.tmp"
    put, inm = "s3:PutObject", {"s3:if-none-match": "*", "s3:ObjectCreationOperation": "true"}
    plain, part_upload = {"s3:ObjectCreationOperation": "true"}, {"s3:ObjectCreationOperation": "false"}
    cases = [  # who, action, resource, request keys, TLS, expected decision
        ("writer", put, part, inm, True, "Allow (CreateAndReadParts)"),
        ("writer", put, pointer, inm, True, "Allow (CreateAndReadParts)"),
        ("writer", put, claim, inm, True, "Allow (CreateAndReadParts)"),
        ("writer", put, part, plain, True, "ExplicitDeny (DenyPutWithoutIfNoneMatch)"),
        ("writer with s3:* attached by mistake", put, pointer, plain, True, "ExplicitDeny (DenyPutWithoutIfNoneMatch)"),
        ("admin", put, seal, plain, True, "ExplicitDeny (DenyPutWithoutIfNoneMatch)"),
        ("writer", put, part, part_upload, True, "Allow (CreateAndReadParts)"),  # UploadPart: exempt
        ("writer", put, seal, inm, True, "ImplicitDeny"),
        ("sealer", put, seal, inm, True, "Allow (CreateSeals)"),
        ("sealer", put, version, inm, True, "Allow (CreateSeals)"),
        ("sealer", put, tile, inm, True, "Allow (CreateSeals)"),
        ("sealer", put, version, plain, True, "ExplicitDeny (DenyPutWithoutIfNoneMatch)"),
        ("admin", put, version, plain, True, "ExplicitDeny (DenyPutWithoutIfNoneMatch)"),
        ("writer", put, version, inm, True, "ImplicitDeny"),
        ("sealer", put, iceberg, inm, True, "Allow (CreateSeals)"),
        ("sealer", put, iceberg, plain, True, "ExplicitDeny (DenyPutWithoutIfNoneMatch)"),
        ("admin", put, iceberg, plain, True, "ExplicitDeny (DenyPutWithoutIfNoneMatch)"),
        ("writer", put, iceberg, inm, True, "ImplicitDeny"),
        ("sealer", "s3:GetObject", version, {}, True, "Allow (ReadPointersAndSeals)"),
        ("sealer", "s3:GetObject", part, {}, True, "Allow (ReadPointersAndSeals)"),
        ("admin", "s3:DeleteObject", version, {}, True, "ExplicitDeny (DenyDeleteExceptTemps)"),
        ("sealer", put, part, inm, True, "ImplicitDeny"),
        ("sealer", "s3:GetObject", pointer, {}, True, "Allow (ReadPointersAndSeals)"),
        ("writer", "s3:DeleteObject", part, {}, True, "ExplicitDeny (DenyDeleteExceptTemps)"),
        ("writer with s3:* attached by mistake", "s3:DeleteObject", pointer, {}, True,
         "ExplicitDeny (DenyDeleteExceptTemps)"),
        ("admin", "s3:DeleteObjectVersion", seal, {}, True, "ExplicitDeny (DenyDeleteExceptTemps)"),
        ("sweeper", "s3:DeleteObject", temp, {}, True, "Allow (DeleteTempsOnly)"),
        ("sweeper", "s3:DeleteObject", part, {}, True, "ExplicitDeny (DenyDeleteExceptTemps)"),
        ("auditor", "s3:GetObject", part, {}, True, "Allow (ReadObjectsVersionsAndRetention)"),
        ("auditor", "s3:ListBucket", arn, {}, True, "Allow (ListStore)"),
        ("auditor", put, part, inm, True, "ImplicitDeny"),
        ("auditor", "s3:GetObject", part, {}, False, "ExplicitDeny (DenyInsecureTransport)"),
        ("writer", put, part, inm, False, "ExplicitDeny (DenyInsecureTransport)"),
        ("writer with s3:* attached by mistake", "s3:PutBucketPolicy", arn, {}, True,
         "ExplicitDeny (DenyProtectionChangesByDutyRoles)"),
        ("writer with s3:* attached by mistake", "s3:BypassGovernanceRetention", part, {}, True,
         "ExplicitDeny (DenyProtectionChangesByDutyRoles)"),
        ("admin", "s3:PutBucketPolicy", arn, {}, True, "Allow"),  # break-glass stays possible
    ]
    wrong = []
    for who, action, resource, keys, tls, want in cases:
        principal, identity = principals[who]
        context = {"aws:SecureTransport": str(tls).lower(), "aws:PrincipalArn": principal, **keys}
        got = str(decide(Request(principal, action, resource, context), identity, bucket_policy))
        if got != want:
            wrong.append(f"{who} {action} {resource.split(':::')[1]} {keys} tls={tls}: {got}, want {want}")
    assert not wrong, "\n".join(wrong)


def test_destroy_with_governance_bypass(tf: Terraform, archive: Archive) -> None:
    """force_destroy empties the bucket with the governance bypass (GOVERNANCE mode only),
    after lineage wrote locked objects to it."""
    tf.run(archive.where, "destroy", "-auto-approve", "-refresh=false", "-no-color", *archive.variables,
           timeout=APPLY_TIMEOUT)
    archive.destroyed = True
    s3 = archive.client("s3")
    for bucket in (archive.bucket, f"{archive.bucket}-logs"):
        with pytest.raises(ClientError, match="404|Not Found|NoSuchBucket"):
            s3.head_bucket(Bucket=bucket)
    key = archive.client("kms").describe_key(KeyId=archive.out("kms_key_arn"))["KeyMetadata"]
    assert key["KeyState"] == "PendingDeletion"
    with pytest.raises(ClientError, match="NoSuchEntity"):
        archive.client("iam").get_role(RoleName=archive.out("role_arns")["writer"].rsplit("/", 1)[1])
