"""`store.writer()`: the streaming writer on the library's Sink, as a context manager."""
from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import lineage_store as ls
from pkg_support import events, snapshot


def one_partition(n: int, start: int = 1, run: str = "run-w") -> pa.Table:
    """n events of one (run_id, target_crs) partition."""
    t = events(n, runs=(run,), start=start)
    return t.set_column(8, "target_crs", pa.array(["EPSG:25832"] * n))


def stored_ids(root: Path) -> list[str]:
    if not root.exists():
        return []
    t = ds.dataset(root, format="parquet").to_table(columns=["event_id"])
    return sorted(t.column("event_id").to_pylist())


def test_partitions_commit_as_they_fill_and_closing_publishes_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    with store.writer(batch_rows=50) as w:
        w.write(one_partition(30))                             # pyarrow Table
        assert w.buffered_rows == 30 and store.commits() == []
        w.write(pl.from_arrow(one_partition(30, start=31)))    # Polars: fills 50, 10 left
        w.write(duckdb.connect().from_arrow(one_partition(5, start=61)))
        durable = w.flush()                                    # a durability point
        assert [c.row_count for c in durable] == [50, 15]
        assert w.buffered_rows == 0
        w.write(one_partition(120, start=100).to_batches(max_chunksize=40)[0])  # a RecordBatch
    assert w.closed
    assert [c.row_count for c in w.commits] == [50, 15, 40]
    assert sorted(c.commit_id for c in w.commits) == sorted(store.log().column("commit_id").to_pylist())
    assert stored_ids(root) == sorted(
        one_partition(65).column("event_id").to_pylist() + one_partition(40, start=100).column("event_id").to_pylist())
    assert store.verify().clean


def test_an_exception_in_the_block_publishes_none_of_the_buffered_rows(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    with pytest.raises(RuntimeError, match="the job failed"):
        with store.writer(batch_rows=50) as w:
            w.write(one_partition(70))          # one flush of 50 is cut, 20 stay buffered
            raise RuntimeError("the job failed")
    assert w.closed
    # The commit cut before the failure is complete; the 20 buffered rows are not published.
    assert [c.row_count for c in w.commits] == [50]
    assert stored_ids(root) == sorted(one_partition(70).column("event_id").to_pylist()[:50])
    assert store.verify().clean


def test_a_refused_write_keeps_nothing_of_it_and_the_writer_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    good = one_partition(10)
    t = one_partition(90, start=11)
    crs = t.column("target_crs").to_pylist()
    crs[74] = "OGC:CRS84"
    bad = pa.Table.from_batches(t.set_column(8, "target_crs", pa.array(crs)).to_batches(max_chunksize=30))
    with store.writer(batch_rows=20) as w:
        w.write(good)
        with pytest.raises(ls.InputError) as e:
            w.write(bad)                        # rows numbered across the write, all batches checked first
        assert (e.value.row, e.value.field) == (75, "target_crs")
        assert w.buffered_rows == 10
        with pytest.raises(ls.InputError) as e:
            w.write(bad.to_batches()[2])        # one batch: the sink's own check, same rules
        assert (e.value.row, e.value.field) == (15, "target_crs")
        w.write(one_partition(5, start=200))
    assert sum(c.row_count for c in w.commits) == 15
    assert stored_ids(root) == sorted(good.column("event_id").to_pylist()
                                      + one_partition(5, start=200).column("event_id").to_pylist())


def test_max_delay_commits_a_quiet_partition(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    with store.writer(batch_rows=1000, max_delay=0) as w:
        w.write(one_partition(3))
        # Its oldest row has waited max_delay (0 s) by the time the write looks: cut.
        assert w.buffered_rows == 0
        assert [c.row_count for c in w.flush()] == [3]
    # A quiet job: nothing more is written, the writer's ticker commits after max_delay.
    w = store.writer(batch_rows=1000, max_delay=dt.timedelta(milliseconds=200))
    w.write(one_partition(4, start=10))
    assert w.buffered_rows == 4
    # The writer's own `commits` lists what the timer committed (it once missed it: the
    # commit landed after the timer's tick returned and was never collected).
    deadline = time.monotonic() + 60
    while not w.commits and time.monotonic() < deadline:
        time.sleep(0.05)  # polling for the outcome, not timing it
    assert [c.row_count for c in w.commits] == [4]
    assert [c.row_count for c in store.commits()] == [3, 4]
    assert w.commits[0].commit_id == store.commits()[1].commit_id
    assert w.buffered_rows == 0
    assert [c.row_count for c in w.close()] == [4]


def test_one_writer_shared_by_threads(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    with store.writer(batch_rows=64, max_in_flight=2) as w:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: w.write(one_partition(100, start=1000 * i)), range(8)))
    assert sum(c.row_count for c in w.commits) == 800
    assert len(stored_ids(root)) == 800
    assert store.verify().clean


def test_a_writer_per_thread(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)

    def job(i: int) -> int:
        with store.writer(batch_rows=30) as w:
            for k in range(4):
                w.write(events(25, runs=(f"run-{i}",), start=1000 * i + 25 * k))
        return sum(c.row_count for c in w.commits)

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(job, range(4))) == [100] * 4
    assert store.verify().clean and store.verify().rows == 400


def test_misuse_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    with pytest.raises(ls.InputError, match="batch_rows must be at least 1"):
        store.writer(batch_rows=0)
    with pytest.raises(ls.InputError, match="max_delay"):
        store.writer(max_delay=-1)
    w = store.writer()
    w.write(one_partition(2))
    assert [c.row_count for c in w.close()] == [2]
    assert w.close() == w.commits  # idempotent
    with pytest.raises(ls.InputError, match="the writer is closed"):
        w.write(one_partition(2))
    before = snapshot(root)
    w = store.writer()
    w.write(one_partition(2, start=50))
    del w  # dropped without close: its buffered rows are not published (a warning says so)
    assert snapshot(root) == before
