"""Sizing of the Lambda writer (docs/deploy.md, "Sizing for Lambda"): peak RSS and
duration of examples/lambda/handler.py appending 10 k, 100 k and 1 M events from an S3
object (the streaming path: spooled to a temp file, validated, committed flush by flush),
and of a cold process start plus one 10-row commit, each in a fresh Python process (as a
new Lambda execution environment is), against LocalStack's S3 for both the landing bucket
and the archive.

`just lambda-size` runs it: the release wheel of `scripts/dist.sh` installed into a venv
with boto3 (as the Lambda runtime has it), LocalStack started and stopped around it.

    python size.py --python VENV/bin/python --endpoint http://127.0.0.1:PORT [--events 10000,100000,1000000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
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
    r = subprocess.run([python, "-c", CHILD], env={**env, "EVENT": json.dumps(event)},
                       capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if r.returncode != 0:
        sys.exit(f"invocation failed ({r.returncode}):\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True, help="a venv's python with the wheel and boto3")
    ap.add_argument("--endpoint", required=True, help="LocalStack")
    ap.add_argument("--events", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bucket", default=os.environ.get("LINEAGE_S3_BUCKET", "lineage-test"))
    a = ap.parse_args()
    import boto3
    from botocore.config import Config

    s3 = boto3.client("s3", endpoint_url=a.endpoint, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}))
    landing = f"lineage-size-{secrets.token_hex(4)}"
    s3.create_bucket(Bucket=landing)
    s3.put_bucket_versioning(Bucket=landing, VersioningConfiguration={"Status": "Enabled"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("LINEAGE_")}
    env.update({"AWS_ENDPOINT_URL_S3": a.endpoint, "AWS_DEFAULT_REGION": "us-east-1",
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
                env["LINEAGE_STORE"] = f"s3://{a.bucket}/size-cold-{secrets.token_hex(4)}"
                if kind == "s3":
                    put = s3.put_object(Bucket=landing, Key=f"cold/{r}.ndjson", Body=body)
                    event = s3_event(landing, f"cold/{r}.ndjson", put)
                else:
                    event = {"Records": [{"messageId": secrets.token_hex(8), "body": body.decode(),
                                          "eventSource": "aws:sqs", "attributes": {},
                                          "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:q"}]}
                runs.append(invoke(a.python, event, env))
            rows.append((f"cold start + 10 rows ({kind.upper()})", 10, len(body), runs))
        for n in [int(x) for x in a.events.split(",")]:
            path = Path(tmp) / f"events-{n}.ndjson"
            size = write_events(path, n)
            key = f"events/{n}.ndjson"
            s3.upload_file(str(path), landing, key)
            head = s3.head_object(Bucket=landing, Key=key)
            path.unlink()
            runs = []
            for _ in range(a.repeat):
                env["LINEAGE_STORE"] = f"s3://{a.bucket}/size-{n}-{secrets.token_hex(4)}"
                event = s3_event(landing, key, head)
                out = invoke(a.python, event, env)
                assert out["out"]["appended"][0]["rows"] == n, out["out"]
                runs.append(out)
            rows.append((f"{n:,} events (S3 object)", n, size, runs))
    print("| invocation | input | peak RSS (median, max) | handler time (median, min-max) | process wall time |")
    print("|---|---:|---:|---:|---:|")
    for label, n, size, runs in rows:
        rss = [r["peak_rss_kib"] / 1024 for r in runs]
        ht = [r["handler_s"] for r in runs]
        wall = [r["wall_s"] for r in runs]
        print(f"| {label} | {size / 1e6:.1f} MB | {statistics.median(rss):.0f} MiB ({max(rss):.0f}) | "
              f"{statistics.median(ht):.2f} s ({min(ht):.2f}-{max(ht):.2f}) | {statistics.median(wall):.2f} s |")
    print(json.dumps([{"label": l, "events": n, "bytes": s,
                       "runs": [{k: v for k, v in r.items() if k != "out"} for r in runs]}
                      for l, n, s, runs in rows]))


if __name__ == "__main__":
    main()
