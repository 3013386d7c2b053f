"""`Store.verify(witness_keys=…, witness_quorum=…)`: outside C2SP witnesses' cosignatures
of the newest checkpoint required, as `lineage verify --witness-key`. The cosignature is
made here, from the c2sp.org/tlog-cosignature specification (`cosignature/v1`, Ed25519,
with `cryptography`), and stored where `lineage seal --witness-url` stores one, so the
package's check is tested against an implementation nobody else here wrote.

Run by scripts/test.sh with LINEAGE_BIN pointing at the built binary.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import time
from pathlib import Path

import lineage_store as ls
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from test_interop import event, ndjson

LINEAGE = os.environ.get("LINEAGE_BIN") or str(Path(__file__).resolve().parents[2] / "target/debug/lineage")


def lineage(*args: str, stdin: bytes | None = None) -> str:
    r = subprocess.run([LINEAGE, *args], input=stdin, capture_output=True, check=False)
    assert r.returncode == 0, (r.stdout.decode(), r.stderr.decode())
    return r.stdout.decode()


class Cosigner:
    """A witness key: its vkey and cosignature lines, by the spec."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.key = Ed25519PrivateKey.generate()
        self.pub = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.id = hashlib.sha256(name.encode() + b"\n\x04" + self.pub).digest()[:4]

    def vkey(self) -> str:
        key = base64.b64encode(bytes([4]) + self.pub).decode()
        return f"{self.name}+{self.id.hex()}+{key}"

    def line(self, body: str, t: int) -> str:
        sig = self.key.sign(f"cosignature/v1\ntime {t}\n{body}".encode())
        return f"\u2014 {self.name} {base64.b64encode(self.id + t.to_bytes(8, 'big') + sig).decode()}\n"


def cosign(store: Path, seq: int, w: Cosigner) -> Path:
    """Store seal `seq`'s checkpoint cosigned by `w` where `seal --witness-url` would."""
    cp = (store / f"_lineage/tlog/checkpoints/{seq:020d}").read_text()
    body = cp.split("\n\n", 1)[0] + "\n"
    d = store / f"_lineage/tlog/cosignatures/{seq:020d}"
    d.mkdir(parents=True, exist_ok=True)
    p = d / hashlib.sha256(w.vkey().encode()).hexdigest()
    p.write_text(cp + w.line(body, int(time.time())))
    return p


@pytest.fixture
def sealed(tmp_path: Path) -> tuple[Path, str]:
    store = tmp_path / "s"
    key = tmp_path / "k"
    lineage("keygen", "--out", str(key), "--origin", "example.org/py")
    rows = [event(i, "run-a", "EPSG:4326") for i in range(5)]
    lineage("append", "--store", str(store), stdin=ndjson(rows))
    lineage("seal", "--store", str(store), "--signing-key", f"{key}.key", "--origin", "example.org/py")
    return store, (tmp_path / "k.vkey").read_text().strip()


def test_the_newest_checkpoint_must_carry_the_quorum_of_cosignatures(sealed: tuple[Path, str]) -> None:
    path, log_vkey = sealed
    w1, w2 = Cosigner("w1.example/w"), Cosigner("w2.example/w")
    cosign(path, 1, w1)
    store = ls.open(path)
    r = store.verify(witness_keys=[w1.vkey()])
    assert r.clean, [p.message for p in r.problems]
    [a] = r.anchors
    assert a["anchor"] == "witness_keys" and a["held"]
    assert a["statement"].startswith("seal 1's checkpoint cosigned by 1 of 1 witness keys (quorum 1): w1.example/w cosigned at ")

    # Both required (the default): w2's is missing, named by its object.
    r = store.verify(witness_keys=[w1.vkey(), w2.vkey()])
    assert not r.clean
    [p] = r.problems
    assert p.kind == "bad_cosignature"
    assert p.key == f"_lineage/tlog/cosignatures/{1:020d}/{hashlib.sha256(w2.vkey().encode()).hexdigest()}"
    assert "no cosignature by witness w2.example/w of seal 1, the newest" in p.message
    assert store.verify(witness_keys=[w1.vkey(), w2.vkey()], witness_quorum=1).clean

    # A cosignature by another key under w2's name is no cosignature of w2's (and a forged one).
    impostor = Cosigner("w2.example/w")
    stored = cosign(path, 1, impostor)
    stored.rename(stored.parent / hashlib.sha256(w2.vkey().encode()).hexdigest())
    r = store.verify(witness_keys=[w1.vkey(), w2.vkey()], witness_quorum=1)
    assert not r.clean
    [p] = r.problems
    assert "holds no cosignature by w2.example/w" in p.message


def test_keys_and_quorum_are_checked_before_anything_is_read(sealed: tuple[Path, str]) -> None:
    path, log_vkey = sealed
    store = ls.open(path)
    with pytest.raises(ls.InputError, match=r"witness_keys: .* is a log's signing key \(type 0x01\)"):
        store.verify(witness_keys=[log_vkey])
    w = Cosigner("w.example/w")
    with pytest.raises(ls.InputError, match=r"witness_quorum 2: must be from 1 to the number of witness keys given \(1\)"):
        store.verify(witness_keys=[w.vkey()], witness_quorum=2)


def test_files_reads_only_when_the_quorum_cosigned(sealed: tuple[Path, str]) -> None:
    """`Store.files(witness_keys=…)`, as `lineage files --witness-key`: the quorum is judged
    on the newest checkpoint before anything is read."""
    path, _ = sealed
    w1, w2 = Cosigner("w1.example/w"), Cosigner("w2.example/w")
    cosign(path, 1, w1)
    store = ls.open(path)
    parts = store.files(witness_keys=[w1.vkey()])
    assert len(parts) == 1 and parts[0].endswith(".parquet"), parts
    assert store.files(witness_keys=[w1.vkey(), w2.vkey()], witness_quorum=1) == parts

    with pytest.raises(ls.IntegrityError, match=r"no cosignature by witness w2\.example/w of seal 1, the newest"):
        store.files(witness_keys=[w1.vkey(), w2.vkey()])
    with pytest.raises(ls.InputError, match=r"witness_quorum 2: must be from 1 to the number of witness keys given \(1\)"):
        store.files(witness_keys=[w1.vkey()], witness_quorum=2)


def test_seals_lists_what_the_witness_keys_found(sealed: tuple[Path, str]) -> None:
    """`Store.seals(witness_keys=…)`, as `lineage seals --witness-key`: the quorum judged on
    the newest checkpoint, what held and what did not returned beside the seals."""
    path, _ = sealed
    w1, w2 = Cosigner("w1.example/w"), Cosigner("w2.example/w")
    cosign(path, 1, w1)
    store = ls.open(path)
    got = store.seals(witness_keys=[w1.vkey()])
    assert [s["seq"] for s in got["seals"]] == [1]
    [a] = got["witness_keys"]
    assert a["anchor"] == "witness_keys" and a["held"], a
    assert got["witness_keys_problems"] == []
    got = store.seals(witness_keys=[w1.vkey(), w2.vkey()])
    [a] = got["witness_keys"]
    assert not a["held"], a
    [p] = got["witness_keys_problems"]
    assert "no cosignature by witness w2.example/w of seal 1, the newest" in p["message"], p
    assert store.seals()["witness_keys"] == []
    with pytest.raises(ls.InputError, match=r"witness_quorum 2: must be from 1 to the number of witness keys given \(1\)"):
        store.seals(witness_keys=[w1.vkey()], witness_quorum=2)
