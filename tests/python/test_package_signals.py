"""Ctrl-C reaches a call that waits: appending to an S3 endpoint that accepts the
connection and never answers, SIGINT raises KeyboardInterrupt in the caller at once
(before, it went unanswered until the request timed out, minutes later), and nothing is
published by the interruption itself."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent

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
    print(f"KeyboardInterrupt after {{time.monotonic() - started:.1f}} s", flush=True)
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
        child.send_signal(signal.SIGINT)
        # Without the fix the child sits in the call until the request times out (minutes).
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        server.close()
    assert child.returncode == 0, (out, err)
    assert out.startswith("KeyboardInterrupt after "), (out, err)
    return out


def test_sigint_interrupts_an_append_blocked_on_a_silent_endpoint() -> None:
    interrupt_while_blocked("append(data, batch_rows=5)")


def test_sigint_interrupts_a_verify_and_a_log_blocked_on_a_silent_endpoint() -> None:
    interrupt_while_blocked("verify()")
    interrupt_while_blocked("commits()")
