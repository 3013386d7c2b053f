"""Every result of the package crosses process boundaries (multiprocessing, fork and
spawn; what ProcessPoolExecutor, Dask and Ray do with a task's result): value classes
pickle as plain data, a `Store` as what reopens it (URL and endpoint, never credentials),
and what cannot be shared (a memory store, a writer) says so when pickled."""
from __future__ import annotations

import multiprocessing
import os
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

import lineage_store as ls
from pkg_support import append_and_return, conform_and_return, events, flush_count, results_worker


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_every_result_type_pickles_through_a_process_pool(start_method: str, tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    ls.keygen(tmp_path / "seal")
    ctx = multiprocessing.get_context(start_method)
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        got = pool.submit(results_worker, store, str(tmp_path / "seal"), "run-p").result(timeout=300)
    # What the worker made is what the parent reads from the store, value for value.
    assert isinstance(got["store"], ls.Store) and got["store"].url == str(root)
    n = flush_count(events(30, runs=("run-p",)), 10)
    assert [type(c) for c in got["commits"]] == [ls.Commit] * n
    assert sorted(got["commits"], key=lambda c: c.commit_id) == sorted(store.commits(), key=lambda c: c.commit_id)
    assert isinstance(got["report"], ls.VerifyReport) and got["report"].clean and got["report"].rows == 30
    assert got["report"].to_dict()["commits"] == n
    seal = got["seal"]
    assert isinstance(seal, ls.Seal) and seal.tree_size == n
    assert store.verify(expect_head=seal.head, public_key=tmp_path / "seal.pub").clean
    proof = got["proof"]
    assert isinstance(proof, ls.Proof) and proof.to_json() == store.prove(proof.commit_id, seal.head).to_json()
    summary = got["summary"]
    assert isinstance(summary, ls.ProofSummary)
    assert summary == ls.verify_proof(proof, seal.head, public_key=tmp_path / "seal.pub")
    # The store the worker got back still appends.
    assert got["store"].append(events(3, runs=("run-back",)))


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_pool_worker_returns_what_append_gave_it(start_method: str, tmp_path: Path) -> None:
    """The failure the issue saw: Pool.starmap over appends raised MaybeEncodingError after
    the commits were published, so a retry duplicated them."""
    store = ls.open(tmp_path / "store")
    with multiprocessing.get_context(start_method).Pool(2) as pool:
        results = pool.starmap(append_and_return, [(store, f"run-{i}") for i in range(4)])
    ids = sorted(c.commit_id for r in results for c in r)
    assert ids == sorted(c.commit_id for c in store.commits())
    assert len(ids) == sum(flush_count(events(20, runs=(f"run-{i}",)), 7) for i in range(4))


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_conformed_pickles_and_a_pool_worker_returns_it(start_method: str, tmp_path: Path) -> None:
    """`conform`'s result is Arrow data with its changes: it pickles as both (an Arrow IPC
    stream), and what a Pool worker returns appends as what the parent conforms itself."""
    natural = pa.Table.from_pylist(events(12, runs=("run-c",)).to_pylist())
    conformed = ls.conform(natural)
    assert conformed.changes == ["`strategy_index`: Int64 → Int32 (every value fits)"]
    back = pickle.loads(pickle.dumps(conformed))
    assert type(back) is ls.Conformed
    assert back.changes == conformed.changes and back.num_rows == 12
    assert back.to_pyarrow().equals(conformed.to_pyarrow(), check_metadata=True)
    assert pa.table(back).equals(pa.table(conformed))
    with multiprocessing.get_context(start_method).Pool(2) as pool:
        got = pool.starmap(conform_and_return, [(7, "run-c0"), (9, "run-c1")])
    assert [type(c) for c in got] == [ls.Conformed] * 2 and [c.num_rows for c in got] == [7, 9]
    assert got[0].to_pyarrow().equals(conform_and_return(7, "run-c0").to_pyarrow())
    store = ls.open(tmp_path / "store")
    assert sum(c.row_count for r in got for c in store.append(r)) == 16
    assert store.verify().rows == 16


def test_values_pickle_as_plain_data(tmp_path: Path) -> None:
    store = ls.open(tmp_path / "store")
    (commit,) = store.append(events(5, runs=("run-v",)).set_column(8, "target_crs", pa.array(["EPSG:4326"] * 5)))
    (tmp_path / "store" / commit.part_path).chmod(0o644)
    (tmp_path / "store" / commit.part_path).write_bytes(b"tampered")
    report = store.verify()
    assert not report.clean
    for value in (commit, report):
        back = pickle.loads(pickle.dumps(value))
        assert type(back) is type(value)
        assert back.to_json() == value.to_json()
    assert [pickle.loads(pickle.dumps(p)) for p in report.problems] == report.problems
    # A VerifyError carries its report across.
    with pytest.raises(ls.VerifyError) as e:
        store.verify(check=True)
    back = pickle.loads(pickle.dumps(e.value))
    assert str(back) == str(e.value) and back.report.to_json() == report.to_json()
    # The pickle holds the URL and nothing else of the process: no credentials.
    s3 = ls.open("s3://bucket/prefix", endpoint_url="http://127.0.0.1:1")
    # (The variable is put back as it was: the emulator tests that run later in this
    # process take their credentials from it.)
    had = os.environ.get("AWS_SECRET_ACCESS_KEY")
    os.environ["AWS_SECRET_ACCESS_KEY"] = "SECRET-must-not-be-pickled"
    try:
        data = pickle.dumps(s3)
    finally:
        if had is None:
            del os.environ["AWS_SECRET_ACCESS_KEY"]
        else:
            os.environ["AWS_SECRET_ACCESS_KEY"] = had
    assert b"SECRET" not in data
    back = pickle.loads(data)
    assert (back.url, back.endpoint_url) == ("s3://bucket/prefix", "http://127.0.0.1:1")


def test_a_relative_store_reopens_where_it_was_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = ls.open("relative-store")
    commits = store.append(events(2, runs=("run-r",)))
    data = pickle.dumps(store)
    monkeypatch.chdir("/")
    back = pickle.loads(data)
    assert back.url == str(tmp_path / "relative-store")
    assert sorted(back.commits(), key=lambda c: c.commit_id) == sorted(commits, key=lambda c: c.commit_id)


def test_what_lives_in_one_process_refuses_to_be_pickled(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="memory:// store: it exists in this process only"):
        pickle.dumps(ls.open("memory://"))
    with ls.open(tmp_path / "store").writer() as w:
        with pytest.raises(TypeError, match="cannot pickle a Writer"):
            pickle.dumps(w)
