"""Ctrl-C reaches a call that waits: appending to an S3 endpoint that accepts the
connection and never answers, SIGINT raises KeyboardInterrupt in the caller at once
(before, it went unanswered until the request timed out, minutes later), and nothing is
published by the interruption itself: an `append` of a large stream to a local store,
interrupted between its batches (or while its Python producer runs), leaves the store as
it was and `lineage verify` clean.

Promptness is a correctness bound, not a benchmark: the interrupted call returns within
PROMPT seconds of the signal (CLOCK_MONOTONIC, which parent and child share on Linux)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from pkg_support import lineage, snapshot

ROOT = Path(__file__).resolve().parent
# Seconds from SIGINT to the interrupted call's return (the docs say about 50 ms).
PROMPT = 5.0

CHILD = """
import sys, time
sys.path.insert(0, {here!r})
import lineage_store as ls
from pkg_support import events
data = events(20, runs=("run-int",))
print("appending", flush=True)
started = time.monotonic()
try:
    store = ls.open("s3://silent/prefix", endpoint_url={endpoint!r})
    store.{call}
except KeyboardInterrupt:
    print(f"KeyboardInterrupt at {{time.monotonic()!r}}", flush=True)
    sys.exit(0)
print("the call returned", flush=True)
sys.exit(3)
"""


class Silent:
    """A TCP server that accepts every connection, reads what comes, and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.requests: list[bytes] = []
        self.arrived = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(65536)
        except OSError:
            return
        self.requests.append(data)
        self.arrived.set()

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


def interrupt_while_blocked(call: str) -> str:
    server = Silent()
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    code = CHILD.format(here=str(ROOT), endpoint=f"http://127.0.0.1:{server.port}", call=call)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "appending"
        # The call is blocked on the silent endpoint once a request has reached it.
        assert server.arrived.wait(120), "no request reached the silent endpoint"
        assert child.poll() is None, "the call returned before the endpoint answered"
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        # Without the fix the child sits in the call until the request times out (minutes).
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        server.close()
    assert child.returncode == 0, (out, err)
    assert out.startswith("KeyboardInterrupt at "), (out, err)
    assert float(out.split()[-1]) - sent < PROMPT, (out, sent)
    return out


def test_sigint_interrupts_an_append_blocked_on_a_silent_endpoint() -> None:
    interrupt_while_blocked("append(data, batch_rows=5)")


def test_sigint_interrupts_a_verify_and_a_log_blocked_on_a_silent_endpoint() -> None:
    interrupt_while_blocked("verify()")
    interrupt_while_blocked("commits()")


STREAM = """
import ctypes, itertools, json, signal, sys, time
sys.path.insert(0, {here!r})
import pyarrow as pa
import pyarrow.compute as pc
import lineage_store as ls
from pkg_support import events

BATCH, K = 50_000, {k}
template = events(BATCH, runs=("run-big",)).combine_chunks()

def batch(k):
    b = template.to_batches()[0]
    return b.set_column(2, "sequence", pc.add(b.column(2), k * BATCH))

signalled = []
if {where!r} == "producer":
    # Ctrl-C while the producer (Python code) makes batch K.
    def stream():
        for k in range({batches}):
            if k == K:
                signalled.append(time.monotonic())
                signal.raise_signal(signal.SIGINT)
            yield batch(k)
    it = stream()
else:
    # SIGINT raised from C after batch K - 1 (raise(3) through ctypes: no Python code runs,
    # so Python's handler runs at the extension's signal check between spooled batches);
    # batch K comes from a list, the rest from a generator that is never reached.
    def first():
        for k in range(K):
            yield batch(k)
        signalled.append(time.monotonic())
    def rest():
        for k in range(K + 1, {batches}):
            yield batch(k)
    raise_ = getattr(ctypes.CDLL(None), "raise")
    raise_.argtypes = [ctypes.c_int]
    it = itertools.chain(first(), filter(None, map(raise_, [signal.SIGINT])), [batch(K)], rest())
store = ls.open({root!r})
try:
    store.append(pa.RecordBatchReader.from_batches(template.schema, it))
except KeyboardInterrupt:
    print(json.dumps({{"interrupted_after": time.monotonic() - signalled[0]}}), flush=True)
    sys.exit(0)
print("the call returned", flush=True)
sys.exit(3)
"""


def interrupt_a_large_append(tmp_path: Path, where: str) -> None:
    root = tmp_path / "store"
    spool = tmp_path / "tmp"
    spool.mkdir()
    # A store with a commit in it, whose files the interrupted append must leave as they are.
    assert lineage("demo", "--store", str(root), "--events", "30").returncode == 0
    before = snapshot(root)
    code = STREAM.format(here=str(ROOT), root=str(root), where=where, k=5, batches=60)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "TMPDIR": str(spool)})
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert json.loads(r.stdout)["interrupted_after"] < PROMPT, r.stdout
    # Nothing half-published: the same files, byte for byte (no part, pointer or temp of
    # the 3 M-row stream), nothing left in the spool's directory, and verify is clean.
    assert snapshot(root) == before
    assert sorted(spool.rglob("*")) == []
    v = lineage("verify", "--store", str(root), "--json")
    assert v.returncode == 0, (v.stdout, v.stderr)
    report = json.loads(v.stdout)
    assert report["problems"] == [] and report["in_flight"] == 0, report
    assert report["parts_ok"] == report["commits"] == sum(1 for k in before if k.endswith(".parquet"))


def test_sigint_between_the_spooled_batches_of_a_large_append_publishes_nothing(tmp_path: Path) -> None:
    interrupt_a_large_append(tmp_path, "between batches")


def test_sigint_while_the_python_producer_runs_is_a_keyboard_interrupt_and_publishes_nothing(
        tmp_path: Path) -> None:
    """Python's handler raises in the generator; pyarrow hands the KeyboardInterrupt on as
    the stream's error text. It was an `InputError` ("reading the Arrow stream failed")."""
    interrupt_a_large_append(tmp_path, "producer")
