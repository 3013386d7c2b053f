#!/usr/bin/env python3
"""Requests per commit against an S3 emulator, counted by a proxy in front of it: the
`lineage` CLI (append, verify --since-seal, seal, files), deltalake `write_deltalake` and
pyarrow `pq.write_to_dataset`, each writing the same rows as commits of 10 and 10,000 rows.

    .venv/bin/python benches/s3_requests.py --lineage-bin target/debug/lineage \\
        [--endpoint http://127.0.0.1:PORT] [--rows-small 1000] [--rows-large 50000]

The endpoint defaults to $LINEAGE_LOCALSTACK_ENDPOINT (`source .emulators/env` after
`localstack/start.sh`); the bucket to $LINEAGE_S3_BUCKET. Every client is pointed at a
counting proxy on 127.0.0.1 that forwards each request unchanged and classifies it as S3
bills it: LIST (a GET of the bucket), GET (an object, ranged or not), HEAD, PUT, POST
(multipart, batch delete), DELETE. Each engine first writes one round that is not counted
(the table exists, as in a store that is written every day), then one counted round.
The commits of a round are the rows grouped by (run_id, target_crs) and cut into flushes
of the flush size: the commits `lineage append --batch-rows N` makes, one
`write_deltalake`/`write_to_dataset` call each for the others.

Prints a Markdown table: requests per commit by kind and command, and the cost of 10^9
commits at the list prices below. Uses only the standard library, pyarrow and deltalake.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter

# S3 Standard, us-east-1, per 1,000 requests (aws.amazon.com/s3/pricing, as listed since
# 2018 and last read by the project in 2026): PUT, COPY, POST and LIST requests $0.005;
# GET, HEAD and all other requests $0.0004; DELETE free.
PRICE_PER_1000 = {"PUT": 0.005, "POST": 0.005, "LIST": 0.005, "GET": 0.0004, "HEAD": 0.0004, "DELETE": 0.0}
KINDS = ["PUT", "POST", "GET", "HEAD", "LIST", "DELETE"]


class Counts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.c: Counter[str] = Counter()

    def add(self, kind: str) -> None:
        with self.lock:
            self.c[kind] += 1

    def take(self) -> Counter[str]:
        with self.lock:
            out, self.c = self.c, Counter()
        return out


def classify(method: str, target: str) -> str:
    u = urllib.parse.urlsplit(target)
    path = u.path.strip("/")
    q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
    if method == "GET" and "/" not in path and ("list-type" in q or "prefix" in q or not path or not q):
        return "LIST"
    if method in ("GET", "HEAD", "PUT", "POST", "DELETE"):
        return method
    return "OTHER"


def proxy(upstream: str, counts: Counts) -> http.server.ThreadingHTTPServer:
    up = urllib.parse.urlsplit(upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *a: object) -> None:
            pass

        def body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = b""
                while True:
                    n = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if n == 0:
                        self.rfile.readline()
                        return out
                    out += self.rfile.read(n)
                    self.rfile.readline()
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def forward(self) -> None:
            counts.add(classify(self.command, self.path))
            data = self.body()
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "expect")}
            if data or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(data))
            conn = getattr(self.server, "conns", {}).get(threading.get_ident())
            for attempt in range(2):
                if conn is None:
                    conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
                    conn.connect()
                    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                try:
                    conn.request(self.command, self.path, body=data, headers=headers)
                    r = conn.getresponse()
                    payload = r.read()
                    break
                except (http.client.HTTPException, OSError):
                    conn.close()
                    conn = None
                    if attempt:
                        raise
            self.server.conns[threading.get_ident()] = conn  # type: ignore[attr-defined]
            self.send_response_only(r.status, r.reason)
            for k, v in r.getheaders():
                if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                    self.send_header(k, v)
            # A HEAD's length is the object's, as the server said.
            length = r.getheader("Content-Length") if self.command == "HEAD" else None
            self.send_header("Content-Length", length or str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: object, client_address: object) -> None:
            pass  # a client closing its kept-alive connection

    srv = Server(("127.0.0.1", 0), Handler)
    srv.conns = {}  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def events(lineage: str, work: str, rows: int, seed: int) -> str:
    """`rows` demo events of one run as Parquet (made by the CLI: demo, then scan)."""
    store = os.path.join(work, f"gen-{rows}-{seed}")
    out = os.path.join(work, f"events-{rows}-{seed}.parquet")
    subprocess.run([lineage, "demo", "--store", store, "--events", str(rows), "--runs", "1",
                    "--seed", str(seed)], check=True, capture_output=True)
    subprocess.run([lineage, "scan", "--store", store, "--out", out], check=True, capture_output=True)
    return out


def flushes(path: str, batch_rows: int) -> list:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    out = []
    keys = t.group_by(["run_id", "target_crs"]).aggregate([]).to_pylist()
    for k in keys:
        g = t.filter(pc.and_(pc.equal(t["run_id"], k["run_id"]), pc.equal(t["target_crs"], k["target_crs"])))
        out.extend(g.slice(i, batch_rows) for i in range(0, g.num_rows, batch_rows))
    return out


def run_lineage(lineage: str, counts: Counts, endpoint: str, bucket: str, inputs: list[str], batch_rows: int) -> list:
    store = f"s3://{bucket}/req-lineage-{batch_rows}-{int(time.time())}"
    common = ["--store", store, "--endpoint-url", endpoint]

    def cli(*args: str) -> str:
        r = subprocess.run([lineage, *args, *common], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"lineage {' '.join(args)}: exit {r.returncode}: {r.stderr[-2000:]}")
        return r.stdout

    rows = []
    for i, inp in enumerate(inputs):
        counts.take()
        out = cli("append", "--input", inp, "--batch-rows", str(batch_rows), "--json")
        commits = sum(1 for line in out.splitlines() if '"commit_id"' in line)
        c_append = counts.take()
        cli("verify", "--since-seal")
        c_verify = counts.take()
        cli("seal")
        c_seal = counts.take()
        parts = len(cli("files").splitlines())
        c_files = counts.take()
        if i == 0:
            continue
        rows += [("lineage", "append", commits, c_append), ("lineage", "verify --since-seal", commits, c_verify),
                 ("lineage", "seal", commits, c_seal), ("lineage", "files (per part)", parts, c_files)]
    return rows


def run_delta(counts: Counts, endpoint: str, bucket: str, inputs: list[str], batch_rows: int) -> list:
    from deltalake import write_deltalake

    uri = f"s3://{bucket}/req-delta-{batch_rows}-{int(time.time())}"
    opts = {"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "test"),
            "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "test"),
            # Safe concurrent commits without a DynamoDB lock: create-only log entries.
            "conditional_put": "etag"}
    rows = []
    for i, inp in enumerate(inputs):
        fl = flushes(inp, batch_rows)
        counts.take()
        for f in fl:
            write_deltalake(uri, f, mode="append", partition_by=["run_id", "target_crs"], storage_options=opts)
        c = counts.take()
        if i:
            rows.append(("deltalake write_deltalake", "append", len(fl), c))
    return rows


def run_pyarrow(counts: Counts, endpoint: str, bucket: str, inputs: list[str], batch_rows: int) -> list:
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    u = urllib.parse.urlsplit(endpoint)
    fs = pafs.S3FileSystem(endpoint_override=u.netloc, scheme=u.scheme, region="us-east-1",
                           access_key=os.environ.get("AWS_ACCESS_KEY_ID", "test"),
                           secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "test"))
    root = f"{bucket}/req-pyarrow-{batch_rows}-{int(time.time())}"
    rows = []
    for i, inp in enumerate(inputs):
        fl = flushes(inp, batch_rows)
        counts.take()
        for f in fl:
            pq.write_to_dataset(f, root_path=root, partition_cols=["run_id", "target_crs"], filesystem=fs)
        c = counts.take()
        if i:
            rows.append(("pyarrow write_to_dataset", "append", len(fl), c))
    return rows


def cost(c: Counter[str], commits: int) -> float:
    """Dollars for 10^9 commits at the list prices."""
    return sum(PRICE_PER_1000.get(k, 0.0004) * n for k, n in c.items()) / 1000 / commits * 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lineage-bin", default="target/debug/lineage")
    ap.add_argument("--endpoint", default=os.environ.get("LINEAGE_LOCALSTACK_ENDPOINT"))
    ap.add_argument("--bucket", default=os.environ.get("LINEAGE_S3_BUCKET", "lineage-test"))
    ap.add_argument("--rows-small", type=int, default=1000, help="rows per round at 10-row flushes")
    ap.add_argument("--rows-large", type=int, default=50000, help="rows per round at 10,000-row flushes")
    a = ap.parse_args()
    if not a.endpoint:
        sys.exit("no endpoint: pass --endpoint or source .emulators/env")
    counts = Counts()
    srv = proxy(a.endpoint, counts)
    via = f"http://127.0.0.1:{srv.server_address[1]}"
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for batch_rows, n in [(10, a.rows_small), (10_000, a.rows_large)]:
            inputs = [events(a.lineage_bin, work, n, seed) for seed in (1, 2)]
            for r in run_lineage(a.lineage_bin, counts, via, a.bucket, inputs, batch_rows):
                rows.append((batch_rows, *r))
            for r in run_delta(counts, via, a.bucket, inputs, batch_rows):
                rows.append((batch_rows, *r))
            for r in run_pyarrow(counts, via, a.bucket, inputs, batch_rows):
                rows.append((batch_rows, *r))
    srv.shutdown()
    print("| flush rows | writer | command | commits | " + " | ".join(KINDS) + " | all | $ per 10^9 commits |")
    print("|---:|---|---|---:|" + "---:|" * (len(KINDS) + 2))
    for batch_rows, who, op, commits, c in rows:
        per = [f"{c.get(k, 0) / commits:.2f}" for k in KINDS]
        other = sum(n for k, n in c.items() if k not in KINDS)
        assert other == 0, f"unclassified requests: {c}"
        print(f"| {batch_rows} | {who} | {op} | {commits} | " + " | ".join(per)
              + f" | {sum(c.values()) / commits:.2f} | {cost(c, commits):,.0f} |")
    print(json.dumps([[b, w, o, n, dict(c)] for b, w, o, n, c in rows]), file=sys.stderr)


if __name__ == "__main__":
    main()
