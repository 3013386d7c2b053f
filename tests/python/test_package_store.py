"""The Python package on a store: log and verify on local disk and on LocalStack's S3,
seals and proofs (checked against the CLI), concurrent appends from threads and from
processes (fork and spawn), and the GIL released while the store is talked to."""
from __future__ import annotations

import http.server
import json
import multiprocessing
import pickle
import threading
import urllib.parse
import uuid
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import lineage_store as ls
from pkg_support import (
    append_worker,
    cli_error,
    events,
    flush_count,
    lineage,
    localstack_endpoint,
    s3_bucket,
    unsigned_put,
)


class Backend:
    """A fresh store on local disk or under a fresh prefix of the LocalStack bucket."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        if kind == "local":
            self.root = tmp_path / "store"
            self.url, self.endpoint = str(self.root), None
        else:
            self.endpoint = localstack_endpoint()
            self.prefix = f"py/{uuid.uuid4().hex}"
            self.url = f"s3://{s3_bucket()}/{self.prefix}"

    def open(self) -> ls.Store:
        return ls.open(self.url, endpoint_url=self.endpoint)

    def cli(self, *args: str) -> list[str]:
        """CLI arguments naming the same store."""
        extra = ["--endpoint-url", self.endpoint] if self.endpoint else []
        return [*args, "--store", self.url, *extra]

    def overwrite(self, key: str, body: bytes) -> None:
        if self.kind == "local":
            p = self.root / key
            p.chmod(0o644)
            p.write_bytes(body)
        else:
            assert self.endpoint is not None
            unsigned_put(self.endpoint, s3_bucket(), f"{self.prefix}/{key}", body)


@pytest.fixture(params=["local", "localstack"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return Backend(request.param, tmp_path)


def test_log_and_verify(backend: Backend) -> None:
    store = backend.open()
    a = store.append(events(120, runs=("run-a", "run-b")), batch_rows=50)
    b = store.append(pl.from_arrow(events(30, runs=("run-b",), start=500)), batch_rows=50)
    log = store.log()
    assert isinstance(log, pa.Table)
    assert log.num_rows == len(a) + len(b)
    # Commit-time order (keyed UUIDv8 commits too): committed_utc, then commit id.
    assert log.column("commit_id").to_pylist() == \
        [c.commit_id for c in sorted(a + b, key=lambda c: (c.committed_utc, c.commit_id))]
    assert sum(log.column("row_count").to_pylist()) == 150
    assert str(log.schema.field("committed_utc").type) == "timestamp[us, tz=UTC]"
    assert [c.commit_id for c in store.commits()] == log.column("commit_id").to_pylist()
    run_b = store.log(run_id="run-b")
    assert set(run_b.column("run_id").to_pylist()) == {"run-b"}
    assert sum(run_b.column("row_count").to_pylist()) == 90
    # The same commits as `lineage log --json`.
    r = lineage(*backend.cli("log", "--json"))
    assert r.returncode == 0, r.stderr
    assert [json.loads(l) for l in r.stdout.splitlines()] == [c.to_dict() for c in store.commits()]

    report = store.verify()
    assert report.clean, report.problems
    assert (report.commits, report.parts_ok, report.parts_hashed, report.rows) == (len(log), len(log), len(log), 150)
    assert report.problems == [] and report.in_flight == 0 and report.head is None
    r = lineage(*backend.cli("verify", "--json"))
    assert r.returncode == 0, r.stdout
    cli = json.loads(r.stdout)
    # (`replica` and `witness` are the CLI's cross-store checks, `--replica-of`/`--witness`.)
    assert {k: v for k, v in report.to_dict().items() if k != "bytes_hashed"} == \
        {k: v for k, v in cli.items() if k not in ("bytes_hashed", "replica", "witness")}
    assert cli["replica"] is None and cli["witness"] is None
    assert report.summary == cli["summary"] == "clean: no problems"
    assert report.in_flight_objects == []
    # Each part's BLAKE3 is in its pointer and the log; verify checks it by default, both
    # digests with digest="all" (as `lineage verify --digest all`).
    blake3 = log.column("blake3").to_pylist()
    assert blake3 == [c.blake3 for c in store.commits()]
    assert all(len(h) == 64 and int(h, 16) >= 0 for h in blake3)
    assert (report.parts_sha256_checked, report.parts_blake3_checked) == (0, len(log))
    full = store.verify(digest="all")
    assert full.clean and (full.parts_sha256_checked, full.parts_blake3_checked) == (len(log), len(log))
    with pytest.raises(ls.InputError, match="expected `fastest` or `all`"):
        store.verify(digest="md5")


def test_objects_in_flight_are_named_as_the_cli_names_them(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(str(root))
    c = store.append(events(10, runs=("run-a",)))[0]
    # A commit caught between its part and its pointer (the pointer removed just now).
    pointer = root / "_lineage" / "commits" / f"run_id={c.run_id}" / f"{c.commit_id}.json"
    pointer.unlink()
    # (its commit-index entry, written after the pointer, is not there either)
    (entry,) = (root / "_lineage" / "index").rglob(f"*.{c.commit_id}.*")
    entry.unlink()
    report = store.verify()
    assert report.clean and report.in_flight == 1
    assert report.summary == "clean except 1 object in flight"
    (obj,) = report.in_flight_objects
    assert (obj["key"], obj["kind"]) == (c.part_path, "part")
    assert "no pointer yet" in obj["detail"]
    cli = json.loads(lineage("verify", "--store", str(root), "--json").stdout)
    assert cli["in_flight_objects"] == report.in_flight_objects
    assert cli["summary"] == report.summary


def test_seal_prove_and_a_tampered_part(backend: Backend, tmp_path: Path) -> None:
    store = backend.open()
    commits = store.append(events(80), batch_rows=30)
    key_id = ls.keygen(tmp_path / "seal")
    seal = store.seal(tmp_path / "seal.key")
    assert (seal.seq, seal.added, seal.tree_size, seal.key_id) == (1, len(commits), len(commits), key_id)
    report = store.verify(public_key=tmp_path / "seal.pub", expect_head=seal.head)
    assert report.clean and report.signed_seals == 1 and report.head == seal.head

    c = commits[1]
    proof = store.prove(c.commit_id, seal.head)
    summary = ls.verify_proof(proof, seal.head, public_key=tmp_path / "seal.pub")
    assert (summary.commit_id, summary.rows, summary.signed_by, summary.seal_seq) == (c.commit_id, c.row_count, key_id, 1)
    # The proof is the CLI's: it checks it, and checks ours.
    path = tmp_path / "proof.json"
    path.write_text(proof.to_json())
    r = lineage("verify-proof", str(path), "--head", seal.head, "--public-key", str(tmp_path / "seal.pub"))
    assert r.returncode == 0, r.stderr
    assert ls.verify_proof(path, seal.head).commit_id == c.commit_id
    assert ls.verify_proof(path.read_text(), seal.head).commit_id == c.commit_id
    other = "0" * 64
    with pytest.raises(ls.VerifyError) as e:
        ls.verify_proof(path, other)
    assert str(e.value) == lineage("verify-proof", str(path), "--head", other).stderr.strip()
    assert e.value.reason and e.value.reason in str(e.value)

    # Tamper with a part: verify names it, as the CLI does; check=True raises.
    backend.overwrite(c.part_path, b"PAR1 not the part PAR1")
    report = store.verify()
    assert not report.clean
    assert [(p.kind, p.key) for p in report.problems] == [("digest_mismatch", c.part_path)] or \
        [(p.kind, p.key) for p in report.problems] == [("size_mismatch", c.part_path)]
    r = lineage(*backend.cli("verify"))
    assert r.returncode == 1
    assert str(report.problems[0]) in r.stdout.splitlines()
    with pytest.raises(ls.VerifyError) as e:
        store.verify(check=True)
    assert e.value.report.problems == report.problems
    assert str(report.problems[0]) in str(e.value)


def test_errors_are_mapped_by_kind_and_carry_the_clis_message(tmp_path: Path) -> None:
    root = str(tmp_path / "store")
    store = ls.open(root)
    commit = "019b76da-a800-7000-8000-000000000001"
    cases: list[tuple[Callable[[], object], type[ls.LineageError], tuple[str, ...]]] = [
        # (call, exception, the same through the CLI)
        # An empty store (a mistyped path): "the store holds no objects", as the CLI says.
        (lambda: store.prove(commit), ls.StoreError, ("prove", "--store", root, commit)),
        (lambda: store.prove("not-a-commit"), ls.InputError, ("prove", "--store", root, "not-a-commit")),
        (lambda: store.seal(tmp_path / "missing.key"), ls.StoreError,
         ("seal", "--store", root, "--signing-key", str(tmp_path / "missing.key"))),
        (lambda: store.log(run_id="../x"), ls.InputError, ("log", "--store", root, "--run-id", "../x")),
    ]
    for call, exc, cli in cases:
        with pytest.raises(exc) as e:
            call()
        assert str(e.value) == cli_error(*cli)
    assert issubclass(ls.StoreError, OSError) and issubclass(ls.InputError, ValueError)
    assert all(issubclass(c, ls.LineageError) for c in (ls.InputError, ls.ConflictError, ls.StoreError, ls.VerifyError))
    (tmp_path / "not-a-key").write_text("lineage-ed25519-secret:AAAA\n")
    with pytest.raises(ls.InputError, match="is not a secret key made by `lineage keygen`"):
        store.seal(tmp_path / "not-a-key")
    with pytest.raises(ls.InputError, match="is not a sha256"):
        store.verify(expect_head="nope")
    # Errors cross process boundaries (a worker's error in a pool) with their attributes.
    with pytest.raises(ls.InputError) as e:
        store.append(events(3).set_column(1, "run_id", pa.array(["a", "_b", "c"])))
    back = pickle.loads(pickle.dumps(e.value))
    assert (type(back), str(back), back.row, back.field, back.reason) == \
        (ls.InputError, str(e.value), 2, "run_id", e.value.reason)


def test_threads_append_to_one_store_at_once(tmp_path: Path) -> None:
    store = ls.open(tmp_path / "store")
    jobs = [(f"run-{i % 3}", 1000 * i) for i in range(12)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda j: store.append(events(90, runs=(j[0],), start=j[1]), batch_rows=20), jobs))
    ids = [c.commit_id for r in results for c in r]
    assert len(ids) == len(set(ids)) == sum(flush_count(events(90, runs=(r,), start=s), 20) for r, s in jobs)
    assert sorted(ids) == sorted(store.log().column("commit_id").to_pylist())
    report = store.verify()
    assert report.clean and report.rows == 12 * 90
    got = ds.dataset(tmp_path / "store", format="parquet").to_table(columns=["event_id"]).column("event_id")
    want = [e for _, start in jobs for e in events(90, start=start).column("event_id").to_pylist()]
    assert sorted(got.to_pylist()) == sorted(want)


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
@pytest.mark.parametrize("where", ["local", "localstack"])
def test_processes_append_to_one_store_at_once(start_method: str, where: str, tmp_path: Path) -> None:
    b = Backend(where, tmp_path)
    store = b.open()
    # The parent has used its runtime before forking: each child must build its own.
    first = store.append(events(10, runs=("run-shared",)))
    # (A process pool that loses a worker raises BrokenProcessPool rather than hanging.)
    with ProcessPoolExecutor(4, mp_context=multiprocessing.get_context(start_method)) as pool:
        futures = [pool.submit(append_worker, b.url, b.endpoint, "run-shared", 60, 1000 * (i + 1)) for i in range(4)]
        results = [f.result(timeout=300) for f in futures]
    ids = [c.commit_id for c in first] + [i for r in results for i in r]
    want = flush_count(events(10, runs=("run-shared",)), 100_000) + sum(
        flush_count(events(60, runs=("run-shared",), start=1000 * (i + 1)), 25) for i in range(4))
    assert len(ids) == len(set(ids)) == want
    assert sorted(ids) == sorted(store.log().column("commit_id").to_pylist())
    report = store.verify()
    assert report.clean and report.rows == 10 + 4 * 60
    # And the parent still works after its children.
    assert store.append(events(5, runs=("run-shared",), start=9000))


class HoldingS3(http.server.BaseHTTPRequestHandler):
    """Answers nothing until the test lets it, then refuses (403)."""

    arrived = threading.Event()
    release = threading.Event()
    requests: list[str] = []

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        HoldingS3.requests.append(f"{self.command} {urllib.parse.unquote(self.path)}")
        HoldingS3.arrived.set()
        HoldingS3.release.wait(120)
        body = b"<Error><Code>AccessDenied</Code><Message>denied by the test</Message></Error>"
        self.send_response(403)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_PUT = do_GET = do_HEAD = do_POST = _any

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_the_gil_is_released_while_the_store_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's I/O runs without the GIL: an S3 endpoint served by a Python thread of
    this very process receives the append's first request (reading the store's identity,
    which comes before the part's PUT) while `append` is still inside the call.
    Were the GIL held, that thread could never run and the request never arrive."""
    for k, v in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
                 "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(k, v)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HoldingS3)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        store = ls.open("s3://held/prefix", endpoint_url=f"http://127.0.0.1:{server.server_port}")
        outcome: list[BaseException] = []

        def append() -> None:
            try:
                store.append(events(10, runs=("run-a",)))
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                outcome.append(e)

        t = threading.Thread(target=append)
        t.start()
        assert HoldingS3.arrived.wait(60), "the append's first request never reached the Python server"
        assert t.is_alive(), "append returned before the store answered"
        assert HoldingS3.requests == ["GET /held/prefix/_lineage/store.json"], HoldingS3.requests
        HoldingS3.release.set()
        t.join(120)
        assert not t.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], ls.StoreError), outcome
    finally:
        HoldingS3.release.set()
        server.shutdown()


def test_read_limits_are_set_from_python_and_named_in_its_terms(tmp_path: Path) -> None:
    """`set_read_limits` sets the defaults of stores opened later (the package's
    `--max-seal-bytes`/`--max-page-bytes`): a seal over the limit is refused unread, and the
    refusal names the keyword, not the flag. Run in a child process: the defaults are the
    package's, per process."""
    import subprocess
    import sys

    store = tmp_path / "s"
    s = ls.open(store)
    s.append(events(10))
    s.seal()
    code = f"""
import lineage_store as ls
print(ls.set_read_limits())
print(ls.set_read_limits(max_seal_bytes=100))
try:
    ls.open({str(store)!r}).files()
    print("read")
except ls.LineageError as e:
    print("refused:", e)
print(ls.set_read_limits(max_seal_bytes=64 << 20))
print(len(ls.open({str(store)!r}).files()))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"({64 << 20}, {256 << 20})", lines
    assert lines[1] == f"(100, {256 << 20})", lines
    assert lines[2].startswith("refused:") and "(max_seal_bytes; not read)" in lines[2], lines
    assert "--max-seal-bytes" not in lines[2], lines
    assert int(lines[4]) >= 1, lines


def test_two_stores_in_one_process_keep_their_own_read_limits(tmp_path: Path) -> None:
    """Read limits are per `Store`: one opened with `max_seal_bytes=100` refuses the seal,
    naming the keyword; one opened beside it with the defaults reads it; a pickled store
    keeps its own limits."""
    import pickle

    store = tmp_path / "s"
    s = ls.open(store)
    s.append(events(10))
    s.seal()
    tight = ls.open(store, max_seal_bytes=100)
    roomy = ls.open(store)
    for _ in range(2):
        with pytest.raises(ls.IntegrityError) as e:
            tight.files()
        assert "a seal is at most 100 (max_seal_bytes; not read)" in str(e.value), str(e.value)
        assert "--max-seal-bytes" not in str(e.value)
        assert len(roomy.files()) >= 1
    with pytest.raises(ls.IntegrityError):
        pickle.loads(pickle.dumps(tight)).files()


def test_prove_a_row_and_scan_with_provenance(tmp_path: Path) -> None:
    store = ls.open(str(tmp_path / "store"))
    commits = store.append(events(80), batch_rows=30)
    seal = store.seal()
    rows = store.scan(provenance=True).read_all().to_pylist()
    assert len(rows) == 80
    by_commit = {c.commit_id: c for c in commits}
    for r in rows:
        c = by_commit[r["commit_id"]]
        assert (r["sealed_by_seal"], r["part_path"]) == (1, c.part_path)
    assert sorted(sum(1 for r in rows if r["commit_id"] == c.commit_id) for c in commits) == sorted(
        c.row_count for c in commits
    )

    row = rows[41]
    proof = store.prove(event_id=row["event_id"], seal=1)
    assert proof.event_id == row["event_id"] and proof.commit_id == row["commit_id"]
    assert proof.row is not None and proof.row["feature_id"] == row["feature_id"]
    summary = ls.verify_proof(proof, seal.head)
    assert (summary.event_id, summary.commit_id, summary.seal_seq) == (row["event_id"], row["commit_id"], 1)
    assert summary.row is not None and summary.row["feature_id"] == row["feature_id"]
    assert summary.row_index is not None
    # The CLI checks the same proof.
    path = tmp_path / "row.json"
    path.write_text(proof.to_json())
    r = lineage("verify-proof", str(path), "--head", seal.head)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"valid: event {row['event_id']} is row {summary.row_index} ")
    # A forged value is refused, saying so.
    forged = json.loads(proof.to_json())
    forged["row"]["values"]["feature_id"] = "forged"
    with pytest.raises(ls.VerifyError) as e:
        ls.verify_proof(json.dumps(forged), seal.head)
    assert "the proof shows" in str(e.value)
    with pytest.raises(ls.StoreError) as e2:
        store.prove(event_id="nope")
    assert '"nope"' in str(e2.value)
    with pytest.raises(ls.InputError):
        store.prove(commits[0].commit_id, event_id=row["event_id"])


def test_a_row_proof_of_a_signed_seal_is_compact(tmp_path: Path) -> None:
    """`Proof.to_json()` of a row proof of a signed seal is `lineage-row-proof/2`: the
    commit's c2sp tlog proof instead of the seal, checked against the key alone."""
    store = ls.open(str(tmp_path / "store"))
    ls.keygen(tmp_path / "k")
    store.append(events(300), batch_rows=3)
    seal = store.seal(tmp_path / "k.key")
    row = store.scan().read_all().to_pylist()[150]
    proof = store.prove(event_id=row["event_id"])
    compact = json.loads(proof.to_json())
    full = json.loads(proof.to_json(embed_seal=True))
    assert compact["format"] == "lineage-row-proof/2" and full["format"] == "lineage-row-proof/1"
    assert compact["commit_proof"].startswith("c2sp.org/tlog-proof@v1\n")
    assert "seal" not in compact
    assert len(proof.to_json(embed_seal=True)) - len(proof.to_json()) > len(full["seal"]) - 4096
    assert len(proof.to_json()) < len(compact["row"]["part_base64"]) + len(json.dumps(compact["row"]["values"])) + 4096
    pub = tmp_path / "k.pub"
    for given in (proof.to_json(), proof):
        s = ls.verify_proof(given, public_key=pub)
        assert (s.event_id, s.commit_id, s.seal_seq) == (row["event_id"], proof.commit_id, 0)
        assert s.row is not None and s.row["feature_id"] == row["feature_id"]
    # The older form still checks against the head.
    assert ls.verify_proof(proof.to_json(embed_seal=True), seal.head, public_key=pub).seal_seq == 1
    assert ls.verify_proof(proof, seal.head).seal_seq == 1
    forged = dict(compact, row=dict(compact["row"], values=dict(compact["row"]["values"], feature_id="forged")))
    with pytest.raises(ls.VerifyError, match="the proof shows"):
        ls.verify_proof(json.dumps(forged), public_key=pub)
    with pytest.raises(ls.InputError, match="public_key"):
        ls.verify_proof(proof.to_json(), seal.head, public_key=pub)
    with pytest.raises(ls.InputError):
        ls.verify_proof(proof.to_json())


def test_a_commit_proof_of_a_signed_seal_is_compact_on_request(tmp_path: Path) -> None:
    """`Proof.to_json(embed_seal=False)` writes what `lineage prove` writes (no
    `--embed-seal`): for a signed seal's commit the `c2sp.org/tlog-proof@v1`, and for a row
    the `lineage-row-proof/2`, which the CLI's `verify-proof --public-key` and
    `verify_proof(public_key=…)` check; `to_json()` of a commit's proof is still the
    `lineage-proof/1`, and an unsigned seal's proof has no compact form."""
    root = tmp_path / "store"
    store = ls.open(str(root))
    ls.keygen(tmp_path / "k")
    pub = tmp_path / "k.pub"
    commits = store.append(events(90), batch_rows=30)
    seal = store.seal(tmp_path / "k.key")
    c = commits[1]
    proof = store.prove(c.commit_id)
    compact = proof.to_json(embed_seal=False)
    assert compact.startswith("c2sp.org/tlog-proof@v1\n")
    assert compact == lineage("prove", "--store", str(root), c.commit_id).stdout
    assert json.loads(proof.to_json())["format"] == json.loads(proof.to_json(embed_seal=True))["format"] == "lineage-proof/1"
    row = store.scan().read_all().to_pylist()[40]
    row_proof = store.prove(event_id=row["event_id"]).to_json(embed_seal=False)
    assert json.loads(row_proof)["format"] == "lineage-row-proof/2"
    for name, text, what in (("commit.proof", compact, c.commit_id), ("row.json", row_proof, row["event_id"])):
        path = tmp_path / name
        path.write_text(text)
        r = lineage("verify-proof", str(path), "--public-key", str(pub), "--json")
        assert r.returncode == 0, r.stderr
        assert what in r.stdout and json.loads(r.stdout)["valid"] is True
    for given in (tmp_path / "commit.proof", compact, proof):
        s = ls.verify_proof(given, public_key=pub)
        assert (s.commit_id, s.rows) == (c.commit_id, c.row_count)
    with pytest.raises(ls.InputError, match="c2sp.org/tlog-proof@v1 carries the seal's checkpoint, not the seal"):
        ls.verify_proof(compact, seal.head, public_key=pub)
    # Another leaf's position: the path no longer leads to the signed root.
    lines = compact.split("\n")
    at = next(i for i, l in enumerate(lines) if l.startswith("index "))
    lines[at] = f"index {int(lines[at][6:]) ^ 1}"
    with pytest.raises(ls.VerifyError, match="INVALID proof <proof text>"):
        ls.verify_proof("\n".join(lines), public_key=pub)
    unsigned = ls.open(str(tmp_path / "unsigned"))
    first = unsigned.append(events(10), batch_rows=5)[0]
    unsigned.seal()
    assert json.loads(unsigned.prove(first.commit_id).to_json(embed_seal=False))["format"] == "lineage-proof/1"


def test_verify_trusts_the_expected_head_on_a_consistency_proof(tmp_path: Path) -> None:
    """`verify(expect_head=…, trust_expected_head=True)`: what the head covers is taken on
    a consistency proof from the tiles, the rest read (`--trust-expected-head`)."""
    store = ls.open(str(tmp_path / "store"))
    store.append(events(60), batch_rows=20)
    first = store.seal()
    store.append(events(30, start=61), batch_rows=10)
    store.seal()
    report = store.verify(expect_head=first.head, trust_expected_head=True, grace="0s")
    assert report.clean, report.problems
    trusted = report.to_dict()["trusted_head"]
    assert (trusted["seq"], trusted["newest_seq"], trusted["consistent"]) == (1, 2, True)
    assert trusted["tree_size"] == first.tree_size and report.commits == trusted["newest_tree_size"] - first.tree_size
    with pytest.raises(ls.InputError, match="expect_head"):
        store.verify(trust_expected_head=True)
    with pytest.raises(ls.InputError, match="since_seal"):
        store.verify(expect_head=first.head, trust_expected_head=True, since_seal=True)


def test_seals_show_diff_and_as_of_time(tmp_path: Path) -> None:
    store = ls.open(str(tmp_path / "store"))
    key_id = ls.keygen(tmp_path / "seal")
    first = store.append(events(60), batch_rows=20)
    s1 = store.seal(tmp_path / "seal.key")
    second = store.append(events(30, start=61), batch_rows=20)
    s2 = store.seal(tmp_path / "seal.key")

    listed = store.seals(public_key=tmp_path / "seal.pub", expect_head=s1.head)
    assert listed["problems"] == [] and listed["expect_head_seq"] == 1
    got = [(s["seq"], s["sha256"], s["key_id"], s["commits_added"], s["tree_size"], s["witnessed"]) for s in listed["seals"]]
    assert got == [
        (1, s1.head, key_id, len(first), len(first), None),
        (2, s2.head, key_id, len(second), len(first) + len(second), None),
    ]
    # The CLI lists the same.
    cli = [json.loads(l) for l in lineage("seals", "--store", str(tmp_path / "store"), "--json").stdout.splitlines()]
    assert cli == listed["seals"]
    bad = store.seals(expect_head="ab" * 32)
    assert [p["kind"] for p in bad["problems"]] == ["head_not_found"]

    c = second[0]
    shown = store.show(c.commit_id)
    assert (shown["kind"], shown["pointer"]["row_count"], shown["sealed_by"]["seq"]) == ("commit", c.row_count, 2)
    seal = store.show(2)
    assert (seal["kind"], seal["seal"]["sha256"], seal["prev_sha256"]) == ("seal", s2.head, s1.head)
    assert sum(seal["runs"].values()) == len(second)

    d = store.diff(1, 2)
    assert d["rows_added"] == 30 and sorted(x["commit_id"] for x in d["commits_added"]) == sorted(p.commit_id for p in second)
    with pytest.raises(ls.InputError):
        store.diff(2, 1)

    t1 = listed["seals"][0]["sealed_utc"]
    assert store.scan(as_of_time=t1).read_all().num_rows == 60
    assert len(store.files(as_of_time=t1)) == len(first)
    assert store.scan(as_of_time=t1[:10]).read_all().num_rows == 90
    assert store.report(tmp_path / "r.json", "json", as_of_time=t1)["checked"]["as_of_seal"] == 1
    with pytest.raises(ls.StoreError) as e:
        store.files(as_of_time="2000-01-01")
    assert f"the first seal was sealed at {t1}" in str(e.value)
    with pytest.raises(ls.InputError) as e2:
        store.scan(as_of_time="3 November")
    assert 'as_of_time "3 November" is not a time' in str(e2.value)


def test_a_keyed_retry_says_its_commits_existed(tmp_path: Path) -> None:
    s = ls.open(str(tmp_path / "s"))
    first = s.append(events(30), commit_key="job-9", batch_rows=10)
    assert first and not any(c.existed for c in first)
    again = s.append(events(30), commit_key="job-9", batch_rows=10)
    assert [c.commit_id for c in again] == [c.commit_id for c in first]
    assert all(c.existed for c in again) and not any(c.adopted for c in again)
    assert len(s.commits()) == len(first)


def test_the_decoded_size_bound_is_a_store_keyword_and_survives_pickling(tmp_path: Path) -> None:
    """`open(url, max_decoded_bytes=N)`: a part that would decode to more than N is refused
    by the store's reads, undecoded, naming the keyword (not the CLI's flag); a pickled
    store comes back with the same bound; another store in the process keeps the default."""
    s = ls.open(str(tmp_path / "s"))
    s.append(events(200))
    s.seal()
    assert s.scan().read_all().num_rows == 200
    tight = ls.open(str(tmp_path / "s"), max_decoded_bytes=1000)
    for store in (tight, pickle.loads(pickle.dumps(tight))):
        # The stream ends with pyarrow's error (docs/python.md), worded for this package.
        with pytest.raises(pa.ArrowInvalid) as e:
            store.scan().read_all()
        msg = str(e.value)
        assert "more than the 1000 bytes one object may decode to (max_decoded_bytes)" in msg, msg
        assert "--max-decoded-bytes" not in msg, msg
    assert ls.open(str(tmp_path / "s")).scan().read_all().num_rows == 200


def test_show_and_diff_take_the_anchors_every_read_takes(tmp_path: Path) -> None:
    """`Store.show`/`Store.diff` check expect_head (and the other anchors) before they
    answer, as `lineage show`/`diff` do: a head no seal has is refused naming it."""
    store = ls.open(str(tmp_path / "store"))
    store.append(events(20), batch_rows=10)
    s1 = store.seal()
    store.append(events(10, start=21), batch_rows=10)
    s2 = store.seal()
    assert store.show(2, expect_head=s2.head)["seal"]["sha256"] == s2.head
    assert store.diff(1, 2, expect_head=s1.head)["rows_added"] == 10
    with pytest.raises(ls.LineageError) as shown:
        store.show(1, expect_head="ab" * 32)
    with pytest.raises(ls.LineageError) as diffed:
        store.diff(1, 2, expect_head="ab" * 32)
    for e in (shown, diffed):
        assert "expect_head" in str(e.value) and "ab" * 32 in str(e.value), str(e.value)
