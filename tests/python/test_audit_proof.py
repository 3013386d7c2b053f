"""An auditor's independent check of lineage-store seals and proofs, in Python.

Nothing here uses lineage-store code: the RFC 9162 proof walk, the hashes and the Parquet
footer are re-done with hashlib and pyarrow, as an auditor without our tool would.
"""

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq

BIN = os.environ.get("LINEAGE_BIN", "target/debug/lineage")


def run(*args):
    out = subprocess.run([BIN, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_path(leaf, index, size, path):
    """RFC 9162 section 2.1.3.2."""
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def test_proof_checks_out_without_lineage_store(tmp_path: Path):
    store = tmp_path / "store"
    run("demo", "--no-seal", "--store", str(store), "--events", "4000", "--batch-rows", "300")
    head = [l for l in run("seal", "--store", str(store)).splitlines() if l.startswith("head ")][0][5:]
    commits = [json.loads(l) for l in run("log", "--store", str(store), "--json").splitlines()]
    for c in (commits[0], commits[len(commits) // 2], commits[-1]):
        proof = json.loads(run("prove", "--store", str(store), c["commit_id"]))
        seal_bytes = proof["seal"].encode()
        assert hashlib.sha256(seal_bytes).hexdigest() == head
        seal = json.loads(seal_bytes)
        assert seal["tree_size"] == proof["tree_size"] == len(commits)
        pointer_bytes = proof["pointer"].encode()
        # The pointer in the proof is byte-identical to the one in the store.
        assert (store / proof["pointer_key"]).read_bytes() == pointer_bytes
        leaf = hashlib.sha256(b"\x00" + hashlib.sha256(pointer_bytes).digest()).digest()
        path = [bytes.fromhex(h) for h in proof["path"]]
        got = root_from_path(leaf, proof["leaf_index"], proof["tree_size"], path)
        assert got is not None and got.hex() == seal["root"]
        # The pointer vouches for the part: its bytes and its footer.
        pointer = json.loads(pointer_bytes)
        part = store / pointer["part_path"]
        assert hashlib.sha256(part.read_bytes()).hexdigest() == pointer["sha256"]
        meta = pq.read_schema(part).metadata
        assert meta[b"lineage_commit_id"].decode() == c["commit_id"]
        # An edited pointer no longer leads to the root.
        forged = pointer_bytes.replace(b'"row_count": ', b'"row_count": 1')
        fleaf = hashlib.sha256(b"\x00" + hashlib.sha256(forged).digest()).digest()
        assert root_from_path(fleaf, proof["leaf_index"], proof["tree_size"], path).hex() != seal["root"]


def test_seals_do_not_disturb_dataset_readers(tmp_path: Path):
    store = tmp_path / "store"
    run("demo", "--no-seal", "--store", str(store), "--events", "2000", "--batch-rows", "500")
    run("seal", "--store", str(store))
    table = ds.dataset(store, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 2000


def test_row_proof_checks_out_without_lineage_store(tmp_path: Path):
    """`prove --event-id`: the commit's proof as above, and the row read with pyarrow from
    the part the proof carries, whose sha256 the pointer records."""
    import base64
    import io

    store = tmp_path / "store"
    run("demo", "--no-seal", "--store", str(store), "--events", "3000", "--batch-rows", "300")
    head = [l for l in run("seal", "--store", str(store)).splitlines() if l.startswith("head ")][0][5:]
    parts = sorted(str(p) for p in store.glob("run_id=*/**/*.parquet"))
    table = pq.read_table(parts, partitioning=None)
    event = table.column("event_id")[2222].as_py()
    proof = json.loads(run("prove", "--store", str(store), "--event-id", event))
    assert proof["format"] == "lineage-row-proof/1"
    seal_bytes = proof["seal"].encode()
    assert hashlib.sha256(seal_bytes).hexdigest() == head
    pointer_bytes = proof["pointer"].encode()
    leaf = hashlib.sha256(b"\x00" + hashlib.sha256(pointer_bytes).digest()).digest()
    path = [bytes.fromhex(h) for h in proof["path"]]
    assert root_from_path(leaf, proof["leaf_index"], proof["tree_size"], path).hex() == json.loads(seal_bytes)["root"]
    pointer = json.loads(pointer_bytes)
    part = base64.b64decode(proof["row"]["part_base64"])
    assert len(part) == pointer["size_bytes"]
    assert hashlib.sha256(part).hexdigest() == pointer["sha256"]
    assert part == (store / pointer["part_path"]).read_bytes()
    row = pq.read_table(io.BytesIO(part)).slice(proof["row"]["row_index"], 1).to_pylist()[0]
    assert row["event_id"] == event
    shown = proof["row"]["values"]
    assert set(shown) == set(row)
    for k in ("event_id", "feature_id", "run_id", "target_crs", "sequence"):
        assert shown[k] == row[k], k
