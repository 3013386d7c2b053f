"""Sizing of the Lambda writer (docs/deploy.md, "Sizing for Lambda"): peak RSS and
duration of examples/lambda/handler.py appending 10 k, 100 k and 1 M events from an S3
object (the streaming path: spooled to a temp file, validated, committed flush by flush),
and of a cold process start plus one 10-row commit, each in a fresh Python process (as a
new Lambda execution environment is), under `/usr/bin/time -v` (its "Maximum resident set
size" is the peak RSS; the child's own VmHWM is reported beside it).

Two places to run it:

- `--local DIR`: no emulator. The archive is a local-disk store under DIR, the S3 object
  a local file, served to the handler by a stand-in for the boto3 client's `get_object`
  (the real client is still created, as the handler does, so boto3's memory is counted).
  This measures the handler and the package; S3's transfer and request latency are not in it.
- `--endpoint URL` (`just lambda-size`): LocalStack's S3 for both the landing bucket and
  the archive.

    python size.py --python VENV/bin/python (--local DIR | --endpoint http://127.0.0.1:PORT)
                   [--events 10000,100000,1000000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# One invocation in a fresh process: import, handler, peak RSS (VmHWM) and wall times.
CHILD = r"""
import json, os, sys, time
t0 = time.monotonic()
sys.path.insert(0, os.environ["HANDLER_DIR"])
import handler, lineage_store
import boto3
from botocore.config import Config
handler._s3 = boto3.client("s3", config=Config(s3={"addressing_style": "path"}))
local = os.environ.get("SIZE_LOCAL_OBJECTS")
if local:
    objects, real = json.loads(local), handler._s3
    class LocalS3:
        # get_object as the handler calls it, the body a local file (the real client
        # above stays alive: its memory is the runtime's too)
        def get_object(self, Bucket, Key, **kw):
            return {"Body": open(objects[f"{Bucket}/{Key}"], "rb")}
    handler._s3 = LocalS3()
t1 = time.monotonic()
class Context:
    def get_remaining_time_in_millis(self): return 900_000
out = handler.handler(json.loads(os.environ["EVENT"]), Context())
t2 = time.monotonic()
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"import_s": t1 - t0, "handler_s": t2 - t1, "peak_rss_kib": hwm, "out": out}))
"""

RUNS = ["nightly-2026-11-30", "nightly-2026-12-01", "backfill-2019"]
CRS = ["EPSG:25832", "EPSG:4326"]


def write_events(path: Path, n: int) -> int:
    """n events in NDJSON, spread over 3 runs and 2 target CRSs (6 partitions), ~3 % rejected."""
    tmpl = ('{{"event_id":"{run}-{i:09d}","run_id":"{run}","sequence":{i},'
            '"event_time_utc":"2026-11-30T{h:02d}:{m:02d}:{s:02d}.{us:06d}Z","stage":"reproject",'
            '"event_type":"crs_transform","feature_id":"parcels:{i:09d}","source_crs":"EPSG:31467",'
            '"target_crs":"{crs}","outcome":"{outcome}","strategy_index":{si},"accuracy_m":{acc},'
            '"rejection_reason":{rr},"tool_version":"geostd/2.4.1","audit_tag":"inspire-tg:2026Q4"}}\n')
    with path.open("w") as f:
        for i in range(n):
            rejected = i % 33 == 7
            f.write(tmpl.format(
                run=RUNS[i % 3], i=i, h=i // 3_600_000 % 24, m=i // 60_000 % 60, s=i // 1000 % 60,
                us=i % 1_000_000, crs=CRS[i // 3 % 2], outcome="rejected" if rejected else "transformed",
                si="null" if rejected else i % 4, acc="null" if rejected else f"{(i % 977) * 0.013:.3f}",
                rr='"outside_area_of_use"' if rejected else "null"))
    return path.stat().st_size


def s3_event(bucket: str, key: str, put: dict) -> dict:
    return {"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
                         "eventName": "ObjectCreated:Put",
                         "s3": {"bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"},
                                "object": {"key": key, "eTag": put["ETag"].strip('"'),
                                           "versionId": put.get("VersionId")}}}]}


def invoke(python: str, event: dict, env: dict) -> dict:
    started = time.monotonic()
    r = subprocess.run(["/usr/bin/time", "-v", python, "-c", CHILD],
                       env={**env, "EVENT": json.dumps(event)},
                       capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if r.returncode != 0:
        sys.exit(f"invocation failed ({r.returncode}):\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    # /usr/bin/time -v: "Maximum resident set size (kbytes): N"
    out["time_max_rss_kib"] = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    # CPU seconds of the whole process (imports included): what a loaded machine does not
    # inflate, unlike the wall times
    out["cpu_s"] = sum(float(re.search(rf"{k} time \(seconds\): ([\d.]+)", r.stderr).group(1))
                       for k in ("User", "System"))
    return out


class LocalStack:
    """The landing bucket and the archive in LocalStack's S3."""

    def __init__(self, endpoint: str, bucket: str) -> None:
        import boto3
        from botocore.config import Config

        self.s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                               config=Config(s3={"addressing_style": "path"}))
        self.landing, self.bucket = f"lineage-size-{secrets.token_hex(4)}", bucket
        self.s3.create_bucket(Bucket=self.landing)
        self.s3.put_bucket_versioning(Bucket=self.landing, VersioningConfiguration={"Status": "Enabled"})
        self.env = {"AWS_ENDPOINT_URL_S3": endpoint}

    def put(self, key: str, path: Path) -> dict:
        self.s3.upload_file(str(path), self.landing, key)
        return self.s3.head_object(Bucket=self.landing, Key=key)

    def store(self, tag: str) -> str:
        return f"s3://{self.bucket}/{tag}-{secrets.token_hex(4)}"


class Local:
    """The landing "bucket" a directory (objects served by the child's stand-in client),
    the archive a local-disk store."""

    def __init__(self, root: Path) -> None:
        self.root, self.landing, self.objects = root, "landing", {}
        (root / "landing").mkdir(parents=True, exist_ok=True)
        self.env: dict[str, str] = {}

    def put(self, key: str, path: Path) -> dict:
        dest = self.root / "landing" / key.replace("/", "_")
        shutil.move(str(path), dest)
        self.objects[f"{self.landing}/{key}"] = str(dest)
        self.env["SIZE_LOCAL_OBJECTS"] = json.dumps(self.objects)
        return {"ETag": f'"{secrets.token_hex(16)}"', "VersionId": secrets.token_hex(8)}

    def store(self, tag: str) -> str:
        return str(self.root / "stores" / f"{tag}-{secrets.token_hex(4)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True, help="a venv's python with the wheel and boto3")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--endpoint", help="LocalStack")
    where.add_argument("--local", type=Path, help="a directory: local-disk store, local objects")
    ap.add_argument("--events", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bucket", default=os.environ.get("LINEAGE_S3_BUCKET", "lineage-test"))
    a = ap.parse_args()
    place = LocalStack(a.endpoint, a.bucket) if a.endpoint else Local(a.local.resolve())
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEAGE_")}
    env.update({"AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                "HANDLER_DIR": str(HERE), "LINEAGE_HANDLER_LOG": "WARNING"})
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # Cold start + one 10-row commit: an S3 object (boto3 imported) and an SQS message.
        small = Path(tmp) / "small.ndjson"
        write_events(small, 10)
        body = small.read_bytes()
        for kind in ("s3", "sqs"):
            runs = []
            for r in range(a.repeat):
                env["LINEAGE_STORE"] = place.store("size-cold")
                if kind == "s3":
                    copy = Path(tmp) / f"cold-{r}.ndjson"
                    copy.write_bytes(body)
                    put = place.put(f"cold/{r}.ndjson", copy)
                    event = s3_event(place.landing, f"cold/{r}.ndjson", put)
                else:
                    event = {"Records": [{"messageId": secrets.token_hex(8), "body": body.decode(),
                                          "eventSource": "aws:sqs", "attributes": {},
                                          "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:q"}]}
                runs.append(invoke(a.python, event, {**env, **place.env}))
            rows.append((f"cold start + 10 rows ({kind.upper()})", 10, len(body), runs))
        for n in [int(x) for x in a.events.split(",")]:
            path = Path(tmp) / f"events-{n}.ndjson"
            size = write_events(path, n)
            key = f"events/{n}.ndjson"
            head = place.put(key, path)
            path.unlink(missing_ok=True)
            runs = []
            for _ in range(a.repeat):
                env["LINEAGE_STORE"] = place.store(f"size-{n}")
                out = invoke(a.python, s3_event(place.landing, key, head), {**env, **place.env})
                assert out["out"]["appended"][0]["rows"] == n, out["out"]
                runs.append(out)
            rows.append((f"{n:,} events (S3 object)", n, size, runs))
    print("| invocation | input | peak RSS (`time -v`; median, max of runs) | handler time (median, min-max) "
          "| process wall time (median) | process CPU user+sys (median) |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, n, size, runs in rows:
        rss = [r["time_max_rss_kib"] / 1024 for r in runs]
        ht = [r["handler_s"] for r in runs]
        wall = [r["wall_s"] for r in runs]
        cpu = [r["cpu_s"] for r in runs]
        print(f"| {label} | {size / 1e6:.1f} MB | {statistics.median(rss):.0f} MiB ({max(rss):.0f}) | "
              f"{statistics.median(ht):.2f} s ({min(ht):.2f}-{max(ht):.2f}) | {statistics.median(wall):.2f} s | "
              f"{statistics.median(cpu):.2f} s |")
    print(json.dumps([{"label": l, "events": n, "bytes": s,
                       "runs": [{k: v for k, v in r.items() if k != "out"} for r in runs]}
                      for l, n, s, runs in rows]))


if __name__ == "__main__":
    main()
