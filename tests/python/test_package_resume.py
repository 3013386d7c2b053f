"""Retries that resume: `Writer(commit_key=…, resume=True)` and
`append(commit_key=…, resume=True)` keep the flushes an earlier attempt committed under the
key (`Commit.kept`) and write the rest, so a job killed mid-run and rerun ends with every
event exactly once, also when the rerun rebuilt its events with new timestamps."""
from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import lineage_store as ls
from pkg_support import events

N, BATCH = 250, 50


def job_events(day: int) -> pa.Table:
    """The job's N events of one partition, their times taken on `day` (a rerun's `now()`)."""
    t = events(N, runs=("run-job",))
    t = t.set_column(8, "target_crs", pa.array(["EPSG:25832"] * N))
    i = t.schema.get_field_index("event_time_utc")
    when = [dt.datetime(2026, 7, day, 6, 0, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=s) for s in range(N)]
    return t.set_column(i, t.schema.field(i), pa.array(when, type=t.schema.field(i).type))


def ids_in(root: Path) -> Counter[str]:
    t = ds.dataset(root, format="parquet", partitioning="hive").to_table(columns=["event_id"])
    return Counter(t.column("event_id").to_pylist())


class Killed(Exception):
    pass


def killed_after_two_flushes(store: ls.Store, key: str) -> list[ls.Commit]:
    """A job that dies after its second flush landed (the stop is injected: an exception
    raised once two commits are in, no timing)."""
    with pytest.raises(Killed):
        with store.writer(batch_rows=BATCH, commit_key=key) as w:
            for b in job_events(13).to_batches(max_chunksize=BATCH):
                w.write(b)
                if len(w.flush()) == 2:
                    raise Killed()
    assert len(w.commits) == 2
    return w.commits


def test_a_writer_killed_mid_run_and_rerun_with_resume_has_every_event_once(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    first = killed_after_two_flushes(store, "job-2026-07-13")
    assert sum(ids_in(root).values()) == 2 * BATCH
    with store.writer(batch_rows=BATCH, commit_key="job-2026-07-13", resume=True) as w:
        w.write(job_events(14))  # rebuilt: other timestamps, so another payload
    commits = w.commits
    assert len(commits) == N // BATCH
    kept = [c for c in commits if c.kept]
    assert [c.commit_id for c in kept] == [c.commit_id for c in first]
    assert all(c.payload_differs is True for c in kept)
    assert all(not c.kept and c.payload_differs is None for c in commits if c not in kept)
    ids = ids_in(root)
    assert len(ids) == N and set(ids.values()) == {1}
    assert store.verify().clean
    # The kept rows are the first attempt's.
    assert all(c.min_event_time_utc.startswith("2026-07-13") for c in kept)


def test_without_resume_the_rerun_is_refused_as_before(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    killed_after_two_flushes(store, "k")
    with pytest.raises(ls.ConflictError, match="different content"):
        with store.writer(batch_rows=BATCH, commit_key="k") as w:
            w.write(job_events(14))
    # The conflicting flush is refused; flushes with no commit yet may land (a sink's
    # commits in flight end complete), so no event is in the store twice.
    assert set(ids_in(root).values()) == {1}
    root2 = tmp_path / "store2"
    store2 = ls.open(root2)
    store2.append(job_events(13).slice(0, 2 * BATCH), batch_rows=BATCH, commit_key="k")
    with pytest.raises(ls.ConflictError, match="different payload"):
        store2.append(job_events(14), batch_rows=BATCH, commit_key="k")
    assert sum(ids_in(root2).values()) == 2 * BATCH


def test_append_resumes_and_names_kept_commits(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ls.open(root)
    # The first attempt got its first 100 events in (two flushes) before it died.
    store.append(job_events(13).slice(0, 2 * BATCH), batch_rows=BATCH, commit_key="nightly")
    commits = store.append(job_events(14), batch_rows=BATCH, commit_key="nightly", resume=True)
    assert [c.kept for c in commits] == [True, True, False, False, False]
    assert [c.payload_differs for c in commits] == [True, True, None, None, None]
    assert '"kept":true' in commits[0].to_json() and "kept" not in commits[2].to_json()
    ids = ids_in(root)
    assert len(ids) == N and set(ids.values()) == {1}
    # Resuming a finished job with the same events: everything kept, identical.
    again = store.append(job_events(14), batch_rows=BATCH, commit_key="nightly", resume=True)
    assert [c.payload_differs for c in again] == [True, True, False, False, False]
    assert sum(ids_in(root).values()) == N


def test_resume_needs_a_key_and_a_key_with_max_delay_is_refused(tmp_path: Path) -> None:
    store = ls.open(tmp_path / "store")
    with pytest.raises(ls.LineageError, match="resume needs commit_key"):
        store.append(job_events(13), resume=True)
    with pytest.raises(ls.LineageError, match="max_delay"):
        store.writer(commit_key="k", max_delay=1.0)
