"""Event files written by ordinary tools: pandas `to_json` (integers of a column with a null
written as `3.0`) and DuckDB `COPY … (FORMAT JSON)` (offsets written `+00`) are appended
as they are, with no value changed; a fraction or an out-of-range float stays refused; an
`event_id` given twice in one batch is refused, naming the first."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import lineage_store as ls
from pkg_support import events

N = 40


def frame() -> pd.DataFrame:
    """N events as pandas holds them, `strategy_index` with a null (so: floats)."""
    df = events(N).to_pandas()
    df.loc[3, "strategy_index"] = None
    assert df["strategy_index"].dtype == "float64"
    return df


def stored(root: Path) -> pa.Table:
    return ds.dataset(root, format="parquet", partitioning="hive").to_table().sort_by("event_id")


def test_pandas_to_json_whole_floats_are_read_as_integers(tmp_path: Path) -> None:
    src = tmp_path / "events.ndjson"
    frame().to_json(src, orient="records", lines=True, date_format="iso", date_unit="us")
    assert '"strategy_index":null' in src.read_text() and '.0,' in src.read_text()
    store = ls.open(tmp_path / "store")
    commits = store.append_file(src)
    assert sum(c.row_count for c in commits) == N
    got = stored(tmp_path / "store")
    want = events(N)
    si = want.column("strategy_index").to_pylist()
    si[3] = None
    want = want.set_column(want.schema.get_field_index("strategy_index"), "strategy_index",
                           pa.array(si, type=pa.int32())).sort_by("event_id")
    assert got.column("strategy_index").to_pylist() == want.column("strategy_index").to_pylist()
    assert got.column("sequence").to_pylist() == want.column("sequence").to_pylist()
    assert got.column("event_time_utc").to_pylist() == want.column("event_time_utc").to_pylist()


def test_a_fraction_for_an_integer_field_stays_refused(tmp_path: Path) -> None:
    df = frame()
    df["strategy_index"] = df["strategy_index"].astype(float)
    df.loc[5, "strategy_index"] = 1.5
    src = tmp_path / "events.ndjson"
    df.to_json(src, orient="records", lines=True, date_format="iso", date_unit="us")
    with pytest.raises(ls.InputError) as e:
        ls.open(tmp_path / "store").append_file(src)
    assert len(e.value.errors) == 1
    assert e.value.errors[0]["field"] == "strategy_index" and "whole number" in e.value.errors[0]["reason"]


def test_duckdb_copy_json_offsets_are_read(tmp_path: Path) -> None:
    src = tmp_path / "events.json"
    con = duckdb.connect()
    t = events(N)
    con.register("t", t)
    con.execute(f"COPY (SELECT * FROM t) TO '{src}' (FORMAT JSON)")
    text = src.read_text()
    assert "+00\"" in text, text[:300]
    store = ls.open(tmp_path / "store")
    commits = store.append_file(src, format="ndjson")
    assert sum(c.row_count for c in commits) == N
    got = stored(tmp_path / "store")
    assert got.column("event_time_utc").to_pylist() == t.sort_by("event_id").column("event_time_utc").to_pylist()


def test_a_duplicate_event_id_in_one_batch_is_refused_naming_the_first(tmp_path: Path) -> None:
    t = events(5)
    ids = t.column("event_id").to_pylist()
    ids[4] = ids[1]
    t = t.set_column(0, "event_id", pa.array(ids))
    with pytest.raises(ls.InputError) as e:
        ls.open(tmp_path / "store").append(t)
    [err] = e.value.errors
    assert err["field"] == "event_id" and err["row"] == 5
    assert "duplicates the event_id of row 2" in err["reason"]
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").rglob("*.parquet"))
