"""`Store.files(since_seal=K)` / `Store.scan(since_seal=K)`: only the commits sealed after
seal K, reading only seals K..N; the anchors judged on those seals."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import lineage_store as ls
from pkg_support import events, lineage


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    s = ls.open(str(root))
    for i, n in enumerate((200, 100, 40)):
        s.append(events(n, start=1 + 1000 * i), batch_rows=25)
        s.seal()
    return root


def head(root: Path, n: int) -> str:
    return hashlib.sha256((root / f"_lineage/seals/{n:020}.json").read_bytes()).hexdigest()


def test_since_seal_gives_the_parts_and_rows_of_the_later_seals(store: Path) -> None:
    s = ls.open(str(store))
    full = s.files(detail=True)
    for k in (1, 2):
        want = [p for p in full if p["sealed_by"] > k]
        assert want and s.files(since_seal=k, detail=True) == want
    assert s.files(since_seal=3) == []
    assert s.scan(since_seal=1).read_all().num_rows == 140
    assert s.scan(since_seal=2, as_of_seal=3).read_all().num_rows == 40


def test_since_seal_checks_the_anchors_against_the_seals_read(store: Path) -> None:
    s = ls.open(str(store))
    assert len(s.files(since_seal=2, expect_head=head(store, 2))) > 0
    with pytest.raises(ls.ConflictError, match="none of seals 2-3, the seals read \\(from since_seal 2\\)"):
        s.files(since_seal=2, expect_head=head(store, 1))
    with pytest.raises(ls.ConflictError, match="none of seals 2-3"):
        s.scan(since_seal=2, expect_head=head(store, 1))
    with pytest.raises(ls.InputError, match="since_seal with as_of_seal, not as_of_time"):
        s.files(since_seal=2, as_of_time="2030-01-01")
    with pytest.raises(ls.InputError, match="the store has no seal 4"):
        s.files(since_seal=4)


def test_since_seal_checks_the_witness_records_of_the_seals_read(store: Path) -> None:
    w = str(store.parent / "w")
    r = lineage("witness", "--store", str(store), "--witness", w)
    assert r.returncode == 0, r.stderr
    s = ls.open(str(store))
    full = s.files(detail=True)
    assert s.files(since_seal=2, witness=w, detail=True) == [p for p in full if p["sealed_by"] > 2]
    assert s.scan(since_seal=1, witness=w).read_all().num_rows == 140
    # No record yet of a store at this location in another witness: refused, as a full read.
    with pytest.raises(ls.ConflictError, match="the witness holds no record of a store at this location"):
        s.files(since_seal=2, witness=str(store.parent / "w2"))
    # Seal 3, witnessed, rewritten (one microsecond later): refused naming it.
    key = store / "_lineage/seals/00000000000000000003.json"
    seal = key.read_text()
    doc = json.loads(seal)
    t = doc["sealed_utc"]
    doc["sealed_utc"] = t[:-2] + ("8" if t[-2] == "9" else str(int(t[-2]) + 1)) + "Z"
    key.unlink()
    key.write_text(json.dumps(doc))
    with pytest.raises(ls.ConflictError, match="00000000000000000003.json.*witnessed_seal_rewritten"):
        s.files(since_seal=2, witness=w)
    with pytest.raises(ls.ConflictError, match="witnessed_seal_rewritten"):
        s.scan(since_seal=3, witness=w)
