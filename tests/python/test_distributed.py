"""Work spread over an engine users already run: a Dask `distributed.LocalCluster`
(2 worker processes, loopback, no dashboard) runs a sharded verify of a store of more than
2,000 parts, and the driver merges the shards' reports (`Store.verify(shard=…)`,
`merge_reports`), as `lineage verify --shard I/N` and `lineage verify merge` do."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

import lineage_store as ls
from pkg_support import events

distributed = pytest.importorskip("distributed")

PARTS = 2_000
SHARDS = 2


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[ls.Store, ls.Seal]:
    """A store of PARTS one-row commits (one part each), sealed."""
    root = tmp_path_factory.mktemp("dist") / "store"
    store = ls.open(root)
    store.append(events(PARTS, runs=tuple(f"run-{i:02d}" for i in range(20))), batch_rows=1)
    seal = store.seal()
    assert seal.tree_size == PARTS
    return store, seal


@pytest.fixture(scope="module")
def flipped(big: tuple[ls.Store, ls.Seal], tmp_path_factory: pytest.TempPathFactory) -> tuple[ls.Store, str]:
    """A copy of the big store with one byte of one part flipped, and that part's key."""
    return flipped_copy(big[0], tmp_path_factory.mktemp("flipped") / "copy")


def verify_shard(store: ls.Store, i: int, n: int, plan_seal: int, report_dir: str | None) -> ls.VerifyReport:
    """What a worker runs: one shard of the verification (the store arrives pickled)."""
    return store.verify(shard=(i, n), plan_seal=plan_seal, report_dir=report_dir)


def without_credentials(store: ls.Store, i: int, n: int) -> ls.VerifyReport:
    """A worker whose own environment holds no AWS credential (and may not ask the
    instance metadata service) runs a shard of an S3 store."""
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
              "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        os.environ.pop(k, None)
    os.environ.update({"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent",
                       "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"})
    return store.verify(shard=(i, n))


def flipped_copy(store: ls.Store, dest: Path) -> tuple[ls.Store, str]:
    """A copy of the store with one byte of one part flipped; the part's key."""
    shutil.copytree(store.url, dest)
    copy = ls.open(dest)
    key = copy.commits()[PARTS // 3].part_path
    path = dest / key
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    return copy, key


def read_parts(refs: list[ls.PartRef]) -> Any:
    """What a worker runs for one partition of a Dask dataframe: `read_part` of each ref."""
    import pyarrow as pa
    return pa.concat_tables([ls.read_part(r) for r in refs])


def chunks(refs: list[ls.PartRef], n: int = 20) -> list[list[ls.PartRef]]:
    return [refs[i::n] for i in range(n)]


def read_without_credentials(ref: ls.PartRef) -> Any:
    """`read_part` in a worker whose environment holds no AWS credential."""
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        os.environ.pop(k, None)
    os.environ.update({"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent",
                       "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"})
    return ls.read_part(ref)


def comparable(r: ls.VerifyReport) -> dict[str, Any]:
    d = r.to_dict()
    for k in ("merged", "shard"):
        d.pop(k, None)
    return d


def test_a_sharded_verify_on_dask_equals_one_process(client: Any, big: tuple[ls.Store, ls.Seal], tmp_path: Path) -> None:
    store, seal = big
    whole = store.verify()
    assert whole.clean and whole.commits == PARTS and whole.parts_ok == PARTS
    reports_dir = str(tmp_path / "reports")
    futures = client.map(verify_shard, [store] * SHARDS, range(SHARDS), [SHARDS] * SHARDS,
                         [seal.seq] * SHARDS, [reports_dir] * SHARDS)
    shards = client.gather(futures)
    assert [type(r) for r in shards] == [ls.VerifyReport] * SHARDS
    # Both shards did a share of the work, and no part twice.
    assert all(0 < r.parts_ok < PARTS for r in shards) and sum(r.parts_ok for r in shards) == PARTS
    merged = ls.merge_reports(shards)
    assert merged.to_dict()["merged"]["shards"] == SHARDS
    assert comparable(merged) == comparable(whole)
    # The same from the report directory, and from the JSON the CLI prints and takes.
    assert comparable(ls.merge_reports(report_dir=reports_dir)) == comparable(whole)
    assert sorted(os.listdir(reports_dir))[0].startswith("verify-shard-00000-of-00002-plan-")
    assert comparable(ls.merge_reports([r.to_json() for r in shards])) == comparable(whole)
    assert comparable(ls.merge_reports([r.to_dict() for r in shards])) == comparable(whole)


def test_merge_reports_refuses_an_incomplete_set(big: tuple[ls.Store, ls.Seal]) -> None:
    store, seal = big
    one = store.verify(shard=(0, 2), plan_seal=seal.seq)
    with pytest.raises(ls.InputError, match="shards 1 of 2 are missing"):
        ls.merge_reports([one])
    with pytest.raises(ls.InputError, match="shard 0 given twice"):
        ls.merge_reports([one, one])
    with pytest.raises(ls.InputError, match="give the shards' reports"):
        ls.merge_reports()
    with pytest.raises(ls.InputError, match="report_dir holds shard reports: give shard=\\(i, n\\)"):
        store.verify(report_dir="/nonexistent")
    with pytest.raises(ls.InputError, match="expected I/N with 0 <= I < N"):
        store.verify(shard=(2, 2))


def test_one_flipped_byte_fails_the_sharded_verify_naming_the_part(
        client: Any, big: tuple[ls.Store, ls.Seal], flipped: tuple[ls.Store, str]) -> None:
    seal = big[1]
    copy, key = flipped
    shards = client.gather(client.map(verify_shard, [copy] * SHARDS, range(SHARDS), [SHARDS] * SHARDS,
                                      [seal.seq] * SHARDS, [None] * SHARDS))
    merged = ls.merge_reports(shards)
    assert not merged.clean
    assert {p.key for p in merged.problems} == {key}, merged.problems
    assert "digest_mismatch" in {p.kind for p in merged.problems}
    assert comparable(merged) == comparable(copy.verify())


def test_a_worker_without_credentials_fails_clearly(client: Any) -> None:
    # Opening is lazy: the driver holds the store; the worker's own environment must reach it.
    s3 = ls.open("s3://lineage-test/store", endpoint_url="http://127.0.0.1:1")
    with pytest.raises(ls.StoreError, match="no AWS credentials from the standard chain"):
        client.submit(without_credentials, s3, 0, SHARDS, pure=False).result(timeout=60)


def sorted_rows(table: Any) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["event_id"])


def test_a_verified_read_on_dask_returns_the_rows_of_scan(client: Any, big: tuple[ls.Store, ls.Seal]) -> None:
    import pyarrow as pa
    import pickle
    store, seal = big
    refs = store.plan()
    assert len(refs) == PARTS and sum(r.rows for r in refs) == PARTS
    ref = refs[0]
    assert ref.sealed_by_seal == seal.seq and ref.seal_sha256 == seal.head and ref.location.endswith(ref.key)
    assert pickle.loads(pickle.dumps(ref)) == ref and b"SECRET" not in pickle.dumps(ref)
    assert {r.location for r in refs} == set(store.files())
    tables = client.gather(client.map(read_parts, chunks(refs)))
    assert sorted_rows(pa.concat_tables(tables)) == sorted_rows(store.scan().read_all())
    # A projection, and the plan's filters.
    assert ls.read_part(ref, columns=["event_id", "run_id"]).column_names == ["event_id", "run_id"]
    run = store.plan(run_id="run-03")
    assert {r.run_id for r in run} == {"run-03"} and sum(r.rows for r in run) == store.scan(run_id="run-03").read_all().num_rows


def test_one_flipped_byte_fails_the_verified_read_naming_the_part(
        client: Any, flipped: tuple[ls.Store, str]) -> None:
    copy, key = flipped
    refs = copy.plan()
    with pytest.raises(ls.IntegrityError, match=re.escape(key)):
        client.gather(client.map(read_parts, chunks(refs)))
    # Every other part reads.
    good = [r for r in refs if r.key != key][:5]
    assert sum(t.num_rows for t in client.gather(client.map(ls.read_part, good))) == 5


def test_a_worker_without_credentials_cannot_read_a_part(client: Any, big: tuple[ls.Store, ls.Seal]) -> None:
    import json
    from lineage_store import _native
    store, _ = big
    ref = store.plan()[0]
    # The same part as planned from a bucket: the ref names the store, never a credential;
    # the worker opens it with its own environment, which holds none.
    restore, (data,) = ref.__reduce__()
    d = json.loads(data)
    d.update(store="s3://lineage-test/store", endpoint_url="http://127.0.0.1:1")
    remote = restore(json.dumps(d))
    assert isinstance(remote, ls.PartRef) and remote.key == ref.key
    with pytest.raises(ls.StoreError, match="no AWS credentials from the standard chain"):
        client.submit(read_without_credentials, remote, pure=False).result(timeout=60)
    assert _native is not None
