"""Every duty role of terraform/modules/s3-archive can do its duty, and nothing more.

The duty policies (writer, sealer, auditor) are rendered by terraform from
terraform/modules/s3-archive/duty-policies (pure data: no AWS call, so offline, from the
local provider mirror). Each command of a duty then runs, as the `lineage` binary, against
an S3 endpoint that enforces that duty's policy: `S3Double` below, a TEST DOUBLE of S3 (a
loopback server inside the test: no S3 emulator here enforces IAM identity policies, and
LocalStack or moto are not running on every machine this runs on). It stores objects in
memory, answers the requests object_store makes (create-only PUT, ranged GET, HEAD,
ListObjectsV2, DELETE), records each one as the IAM request AWS would authorize
(`s3:GetObject`, `s3:PutObject` with `s3:if-none-match`, `s3:ListBucket` with `s3:prefix`,
...) and decides it with iam_eval's evaluator against the role's policy: a denied request
is answered 403 AccessDenied, as S3 would.

Every command must exit 0 with no request denied (writer: append into a new store, again,
with --commit-key and again with the same key; sealer: seal, compact, witness; auditor:
verify, log, files, scan, report, export openlineage and iso19115, prove), and every put
another duty makes outside this role's keys must be denied by this role's policy.
"""
from __future__ import annotations

import datetime as dt
import email.utils
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from iam_eval import Request, decide

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "terraform/modules/s3-archive/duty-policies"
LINEAGE = os.environ.get("LINEAGE_BIN") or str(REPO / "target/debug/lineage")
MIRRORS = ["/opt/tf-plugins", "/usr/local/share/terraform/plugins", "/usr/share/terraform/plugins",
           "~/.terraform.d/plugins", "~/.local/share/terraform/plugins"]
BUCKET, PREFIX, WITNESS_BUCKET = "archive", "lineage", "witness"
NO_POLICY = {"Version": "2012-10-17", "Statement": []}
# Keys two duties create: the store identity (the first append; a seal of a store written
# before identities).
SHARED = {"_lineage/store.json"}


# --- the policies, rendered by terraform ----------------------------------------------------

ROOT_MODULE = """
provider "aws" {
  region                      = "us-east-1"
  access_key                  = "test"
  secret_key                  = "test"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
}
module "p" {
  source       = "%s"
  bucket_name  = "%s"
  store_prefix = "%s"
  kms_key_arn  = "arn:aws:kms:us-east-1:000000000000:key/archive"
}
output "policies" {
  value = { writer = module.p.writer, sealer = module.p.sealer, auditor = module.p.auditor }
}
"""


@pytest.fixture(scope="module")
def policies(tmp_path_factory) -> dict[str, dict]:
    if os.environ.get("LINEAGE_NO_TERRAFORM") == "1":
        pytest.skip("LINEAGE_NO_TERRAFORM=1")
    if not shutil.which("terraform"):
        pytest.skip("terraform is not on PATH: the duty policies cannot be rendered")
    given = os.environ.get("LINEAGE_TF_PROVIDER_MIRROR")
    mirror = next((Path(c).expanduser() for c in ([given] if given else MIRRORS)
                   if (Path(c).expanduser() / "registry.terraform.io/hashicorp/aws").is_dir()), None)
    assert mirror, f"no hashicorp/aws provider mirror in {MIRRORS}; set LINEAGE_TF_PROVIDER_MIRROR"
    work = tmp_path_factory.mktemp("duty-policies")
    (work / "main.tf").write_text(ROOT_MODULE % (MODULE, BUCKET, PREFIX))
    rc = work / "terraform.rc"
    rc.write_text('disable_checkpoint = true\nprovider_installation {\n  filesystem_mirror {\n'
                  f'    path    = "{mirror}"\n    include = ["registry.terraform.io/hashicorp/aws"]\n  }}\n}}\n')
    env = {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "TF_IN_AUTOMATION": "1", "TF_INPUT": "0",
           "CHECKPOINT_DISABLE": "1"}
    for args in (["init", "-input=false"], ["apply", "-auto-approve", "-input=false"]):
        r = subprocess.run(["terraform", f"-chdir={work}", *args, "-no-color"], env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"terraform {args[0]}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    r = subprocess.run(["terraform", f"-chdir={work}", "output", "-json", "policies"], env=env,
                       capture_output=True, text=True, timeout=120, check=True)
    return {duty: json.loads(doc) for duty, doc in json.loads(r.stdout).items()}


# --- S3Double: a test double of S3 that enforces one identity policy -------------------------

@dataclass
class Seen:
    action: str
    resource: str
    context: dict[str, str]
    decision: str
    what: str  # e.g. "PUT lineage/_lineage/index/..."


@dataclass
class State:
    objects: dict[tuple[str, str], tuple[bytes, dt.datetime]] = field(default_factory=dict)
    policy: dict = field(default_factory=lambda: NO_POLICY)
    principal: str = "arn:aws:iam::000000000000:role/nobody"
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class S3Double(http.server.BaseHTTPRequestHandler):
    """TEST DOUBLE of S3 (path-style requests), deciding each request by `state.policy`."""

    protocol_version = "HTTP/1.1"
    state: State  # set on the subclass made per server

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass

    def _target(self) -> tuple[str, str, dict[str, str]]:
        u = urllib.parse.urlsplit(self.path)
        bucket, _, key = urllib.parse.unquote(u.path).lstrip("/").partition("/")
        query = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        return bucket, key, query

    def _allowed(self, action: str, resource: str, context: dict[str, str], what: str) -> bool:
        st = self.state
        ctx = {"aws:SecureTransport": "true", "aws:PrincipalArn": st.principal, **context}
        d = str(decide(Request(st.principal, action, resource, ctx), [st.policy], NO_POLICY))
        with st.lock:
            st.seen.append(Seen(action, resource, context, d, what))
        if d.startswith("Allow"):
            return True
        self._reply(403, _error("AccessDenied", f"{action} on {resource}: {d}"))
        return False

    def _reply(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None,
               head: bool = False) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)) if not head else (headers or {}).get(
            "Content-Length", "0"))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self) -> None:  # noqa: N802 - http.server's names
        bucket, key, query = self._target()
        if not key:
            return self._list(bucket, query)
        self._get(bucket, key, head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        bucket, key, _ = self._target()
        self._get(bucket, key, head=True)

    def _get(self, bucket: str, key: str, head: bool) -> None:
        if not self._allowed("s3:GetObject", f"arn:aws:s3:::{bucket}/{key}", {},
                             f"{self.command} {key}"):
            return
        found = self.state.objects.get((bucket, key))
        if found is None:
            return self._reply(404, b"" if head else _error("NoSuchKey", key), head=head)
        data, mtime = found
        headers = {"ETag": _etag(data), "Last-Modified": email.utils.format_datetime(mtime, usegmt=True),
                   "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
        rng = self.headers.get("Range")
        if rng and not head:
            start_s, _, end_s = rng.removeprefix("bytes=").partition("-")
            if start_s == "":
                start, end = max(0, len(data) - int(end_s)), len(data) - 1
            else:
                start, end = int(start_s), min(int(end_s) if end_s else len(data) - 1, len(data) - 1)
            if start >= len(data):
                return self._reply(416, _error("InvalidRange", rng))
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return self._reply(206, data[start:end + 1], headers)
        if head:
            headers["Content-Length"] = str(len(data))
        self._reply(200, data, headers, head=head)

    def _list(self, bucket: str, query: dict[str, str]) -> None:
        prefix = query.get("prefix", "")
        if not self._allowed("s3:ListBucket", f"arn:aws:s3:::{bucket}", {"s3:prefix": prefix},
                             f"LIST {prefix}"):
            return
        after = query.get("continuation-token") or query.get("start-after", "")
        delimiter, limit = query.get("delimiter", ""), int(query.get("max-keys", "1000"))
        keys = sorted(k for (b, k) in self.state.objects if b == bucket and k.startswith(prefix) and k > after)
        contents, prefixes = [], []
        for k in keys:
            rest = k[len(prefix):]
            if delimiter and delimiter in rest:
                p = prefix + rest.split(delimiter, 1)[0] + delimiter
                if p not in prefixes:
                    prefixes.append(p)
                continue
            contents.append(k)
        page, more = contents[:limit], len(contents) > limit
        xml = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
               f"<Name>{bucket}</Name><Prefix>{escape(prefix)}</Prefix><KeyCount>{len(page)}</KeyCount>",
               f"<MaxKeys>{limit}</MaxKeys><IsTruncated>{'true' if more else 'false'}</IsTruncated>"]
        if more:
            xml.append(f"<NextContinuationToken>{escape(page[-1])}</NextContinuationToken>")
        for k in page:
            data, mtime = self.state.objects[(bucket, k)]
            xml.append(f"<Contents><Key>{escape(k)}</Key>"
                       f"<LastModified>{mtime.strftime('%Y-%m-%dT%H:%M:%S.000Z')}</LastModified>"
                       f"<ETag>{_etag(data)}</ETag><Size>{len(data)}</Size>"
                       "<StorageClass>STANDARD</StorageClass></Contents>")
        for p in prefixes:
            xml.append(f"<CommonPrefixes><Prefix>{escape(p)}</Prefix></CommonPrefixes>")
        xml.append("</ListBucketResult>")
        self._reply(200, "".join(xml).encode(), {"Content-Type": "application/xml"})

    def do_PUT(self) -> None:  # noqa: N802
        bucket, key, query = self._target()
        body = self._body()
        if "partNumber" in query or "uploadId" in query or "x-amz-copy-source" in self.headers:
            return self._reply(501, _error("NotImplemented", "the double serves single PUTs only"))
        context = {"s3:ObjectCreationOperation": "true"}
        if self.headers.get("If-None-Match") is not None:
            context["s3:if-none-match"] = self.headers["If-None-Match"]
        if not self._allowed("s3:PutObject", f"arn:aws:s3:::{bucket}/{key}", context, f"PUT {key}"):
            return
        with self.state.lock:
            if self.headers.get("If-None-Match") == "*" and (bucket, key) in self.state.objects:
                return self._reply(412, _error("PreconditionFailed", key))
            self.state.objects[(bucket, key)] = (body, dt.datetime.now(dt.timezone.utc).replace(microsecond=0))
        self._reply(200, b"", {"ETag": _etag(body)})

    def do_DELETE(self) -> None:  # noqa: N802
        bucket, key, _ = self._target()
        if not self._allowed("s3:DeleteObject", f"arn:aws:s3:::{bucket}/{key}", {}, f"DELETE {key}"):
            return
        with self.state.lock:
            self.state.objects.pop((bucket, key), None)
        self._reply(204)

    def do_POST(self) -> None:  # noqa: N802
        self._body()
        self._reply(501, _error("NotImplemented", "the double serves no POST (multipart, bulk delete)"))


def _etag(data: bytes) -> str:
    return f'"{hashlib.md5(data).hexdigest()}"'  # noqa: S324 - S3's ETag of a single PUT


def _error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{escape(message)}</Message></Error>").encode()


@pytest.fixture()
def s3():
    state = State()
    handler = type("S3DoubleOfTest", (S3Double,), {"state": state})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state, f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


# --- the duties ---------------------------------------------------------------------------

def events(start: int, n: int, run_id: str) -> bytes:
    rows = []
    for i in range(start, start + n):
        rows.append({
            "event_id": f"00000000-0000-4000-8000-{i:012d}", "run_id": run_id, "sequence": i,
            "event_time_utc": f"2026-07-13T06:00:{i % 60:02d}Z", "stage": "reproject",
            "event_type": "crs_transform", "feature_id": f"parcels:{i:08d}", "source_crs": "EPSG:31467",
            "target_crs": "EPSG:4326", "outcome": "transformed", "strategy_index": 0,
            "accuracy_m": 0.5, "rejection_reason": None, "tool_version": "test/1", "audit_tag": "duty",
        })
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def run_as(state: State, endpoint: str, policy: dict, duty: str, args: list[str],
           stdin: bytes | None = None) -> subprocess.CompletedProcess:
    state.policy, state.principal = policy, f"arn:aws:iam::000000000000:role/lineage-{duty}"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "AWS_ALLOW_HTTP": "true"}
    for k in ("LINEAGE_STORE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        env.pop(k, None)
    return subprocess.run([LINEAGE, *args], input=stdin, capture_output=True, env=env, timeout=300)


def test_every_duty_succeeds_with_its_policy_and_nothing_more(policies, s3, tmp_path: Path) -> None:
    state, endpoint = s3
    store, ep = f"s3://{BUCKET}/{PREFIX}", ["--endpoint-url", endpoint]
    witness = f"s3://{WITNESS_BUCKET}/w"
    duties: dict[str, list[tuple[list[str], bytes | None]]] = {
        "writer": [
            (["append", "--store", store, *ep, "--batch-rows", "5"], events(0, 20, "run-a")),
            (["append", "--store", store, *ep, "--batch-rows", "5"], events(20, 20, "run-a")),
            (["append", "--store", store, *ep, "--commit-key", "job-1"], events(40, 10, "run-b")),
            (["append", "--store", store, *ep, "--commit-key", "job-1"], events(40, 10, "run-b")),
        ],
        "sealer": [
            (["seal", "--store", store, *ep, "--unsigned", "--iceberg"], None),
            (["compact", "--store", store, *ep, "--unsigned", "--target-rows", "100", "--min-parts", "2", "--iceberg"], None),
            (["witness", "--store", store, *ep, "--witness", witness, "--witness-endpoint-url", endpoint], None),
        ],
        "auditor": [
            (["verify", "--store", store, *ep, "--grace", "0s"], None),
            (["log", "--store", store, *ep], None),
            (["files", "--store", store, *ep], None),
            (["scan", "--store", store, *ep, "--out", str(tmp_path / "rows.parquet")], None),
            (["report", "--store", store, *ep, "--out", str(tmp_path / "report.html")], None),
            (["export", "openlineage", "--store", store, *ep], None),
            (["export", "iso19115", "--store", store, *ep, "--run-id", "run-a"], None),
        ],
    }
    puts: dict[str, set[str]] = {}
    denied = []
    for duty, commands in duties.items():
        policy = policies[duty]
        for args, stdin in commands:
            # The witness store is another store with a grant of its own: allow it there.
            start = len(state.seen)
            r = run_as(state, endpoint, policy | {"Statement": [*policy["Statement"], {
                "Effect": "Allow", "Action": "s3:*", "Resource": [f"arn:aws:s3:::{WITNESS_BUCKET}",
                                                                  f"arn:aws:s3:::{WITNESS_BUCKET}/*"]}]},
                       duty, args, stdin)
            assert r.returncode == 0, f"{duty}: lineage {' '.join(args)} exited {r.returncode}:\n" \
                f"{r.stdout.decode()[-2000:]}\n{r.stderr.decode()[-3000:]}"
            for s in state.seen[start:]:
                if not s.decision.startswith("Allow"):
                    denied.append(f"{duty}: lineage {args[0]}: {s.what}: {s.decision}")
                if s.action == "s3:PutObject" and f":::{BUCKET}/" in s.resource:
                    puts.setdefault(duty, set()).add(s.resource)
        if duty == "sealer":
            commit = json.loads(run_as(state, endpoint, policies["auditor"], "auditor",
                                       ["log", "--store", store, *ep, "--json"]).stdout.splitlines()[0])
            duties["auditor"].append((["prove", "--store", store, *ep, commit["commit_id"]], None))
    assert not denied, "requests a duty's own commands made were denied:\n" + "\n".join(denied)

    # What each duty wrote: the writer the identity, parts, pointers, index entries and
    # claims; the sealer seals, their completion, the Delta log and the compaction.
    wrote = {d: sorted({_area(r) for r in rs}) for d, rs in puts.items()}
    assert wrote["writer"] == ["_lineage/commit-keys", "_lineage/commits", "_lineage/index",
                               "_lineage/store.json", "run_id=run-a", "run_id=run-b"], wrote
    assert {"_lineage/seals", "_lineage/heads", "_lineage/tiles", "_lineage/tlog", "_lineage/leaves", "_delta_log",
            "_lineage/compacted", "_iceberg"} <= set(wrote["sealer"]), wrote
    assert "auditor" not in wrote, wrote

    # A put outside the role is refused: each duty's policy denies the puts only the others make.
    refused = []
    for duty, policy in policies.items():
        for other, resources in puts.items():
            for resource in sorted(resources - puts.get(duty, set())):
                if _area(resource) in wrote.get(duty, []) or _area(resource) in SHARED:
                    continue
                ctx = {"aws:SecureTransport": "true", "s3:if-none-match": "*",
                       "s3:ObjectCreationOperation": "true"}
                d = str(decide(Request("p", "s3:PutObject", resource, ctx), [policy], NO_POLICY))
                if d.startswith("Allow"):
                    refused.append(f"{duty} may put {_area(resource)} ({other}'s): {d}")
    assert not refused, "\n".join(refused)


def _area(resource: str) -> str:
    """The area of a key: `_lineage/<kind>` (or `_lineage/store.json`), `_delta_log`, or the
    data's `run_id=<r>` directory."""
    key = resource.split(f":::{BUCKET}/{PREFIX}/", 1)[1]
    parts = key.split("/")
    if parts[0] == "_lineage":
        return "/".join(parts[:2])
    return parts[0]
