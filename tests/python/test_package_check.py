"""`lineage_store.check` (issue 22): validates Arrow data or a file exactly as an append
would, without a store, and returns every error as `lineage check --json` lists them;
`InputError.errors` lists the same for a refused append."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import lineage_store as ls
from pkg_support import events, lineage, snapshot, write_ipc


def with_values(t: pa.Table, name: str, changes: dict[int, object]) -> pa.Table:
    """`t` with column `name` changed at the 0-based rows in `changes`."""
    col = t.column(name).to_pylist()
    for i, v in changes.items():
        col[i] = v
    i = t.schema.get_field_index(name)
    return t.set_column(i, t.schema.field(i), pa.array(col, t.schema.field(i).type))


def cli_check(path: Path, *args: str) -> dict[str, Any]:
    r = lineage("check", "--input", str(path), "--json", *args)
    got: dict[str, Any] = json.loads(r.stdout)
    return got


def bad_table() -> pa.Table:
    t = events(40, runs=("run-a",))
    t = with_values(t, "target_crs", {4: "WGS84", 30: "OGC:CRS84"})
    return with_values(t, "stage", {17: ""})


def test_a_valid_table_and_file_have_no_errors(tmp_path: Path) -> None:
    t = events(50)
    assert ls.check(t) == []
    assert ls.check(write_ipc(t, tmp_path / "ok.arrow")) == []
    assert ls.check(str(write_ipc(t, tmp_path / "ok.arrow"))) == []


def test_every_error_of_a_table_in_row_order_as_the_cli_lists_them(tmp_path: Path) -> None:
    bad = bad_table()
    got = ls.check(bad)
    assert [(e["row"], e["field"]) for e in got] == [(5, "target_crs"), (18, "stage"), (31, "target_crs")]
    assert got[0]["line"] is None and got[0]["value"] == "WGS84"
    assert "is not an EPSG CRS identifier" in got[0]["reason"]
    # Exactly the objects `lineage check --json` prints for the same events in a file.
    cli = cli_check(write_ipc(bad, tmp_path / "bad.arrow"))
    assert cli["valid"] is False and cli["error_count"] == 3
    assert got == cli["errors"]
    assert ls.check(bad, max_errors=2) == got[:2]
    # A refused append lists them too, and publishes nothing.
    root = tmp_path / "store"
    store = ls.open(root)
    with pytest.raises(ls.InputError) as e:
        store.append(bad)
    assert e.value.errors == got
    assert (e.value.row, e.value.field) == (5, "target_crs")
    assert str(e.value).splitlines()[1].startswith("row 18, field `stage`: is an empty string")
    assert snapshot(root) == {}


def test_files_of_every_text_format_are_checked_with_their_lines(tmp_path: Path) -> None:
    bad = bad_table()
    ndjson = tmp_path / "bad.ndjson"
    rows = bad.to_pylist()
    for r in rows:
        r["event_time_utc"] = r["event_time_utc"].isoformat()
    ndjson.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = ls.check(ndjson)
    assert [(e["line"], e["field"]) for e in got] == [(5, "target_crs"), (18, "stage"), (31, "target_crs")]
    assert got == cli_check(ndjson)["errors"]
    # CSV with CRLF line ends (what Python's csv module writes): lines as an editor counts.
    csv = tmp_path / "bad.data"
    pacsv.write_csv(bad, str(csv), pacsv.WriteOptions(quoting_style="needed"))
    text = csv.read_text().replace("\n", "\r\n")
    csv.write_bytes(text.encode())
    got = ls.check(csv, format="csv")
    lines = [e["line"] for e in got if e["field"] == "target_crs"]
    assert lines == [6, 32], got  # the header is line 1
    assert got == cli_check(csv, "--format", "csv")["errors"]
    with pytest.raises(ls.InputError, match="cannot tell the format"):
        ls.check(csv)
    with pytest.raises(ls.InputError, match='format "xml"'):
        ls.check(csv, format="xml")
    with pytest.raises(ls.StoreError):
        ls.check(tmp_path / "missing.ndjson")


def test_a_table_built_the_natural_way_is_told_every_mismatch_and_the_cast_that_fixes_it(tmp_path: Path) -> None:
    rows = events(6).to_pylist()
    for r in rows:
        r["audit_tag"] = None
        r["source_crs"] = None
    natural = pa.Table.from_pylist(rows)   # no schema: int64 strategy_index, null-typed columns
    got = ls.check(natural)
    # Every column at once, in the contract's order. The all-None columns are typed null:
    # they can hold nothing but nulls, so they are taken as all null of the contract's type.
    assert [e["field"] for e in got] == ["strategy_index"]
    assert all(e["line"] is None and e["row"] is None for e in got)
    assert [natural.schema.field(f).type for f in ("source_crs", "rejection_reason", "audit_tag")] == [pa.null()] * 3
    i = natural.schema.get_field_index("strategy_index")
    assert ls.check(natural.set_column(i, "strategy_index", natural.column(i).cast(pa.int32()))) == []
    root = tmp_path / "store"
    with pytest.raises(ls.InputError) as e:
        ls.open(root).append(natural)
    message = str(e.value)
    assert "`strategy_index` has type Int64, the contract expects Int32" in message
    assert "hint: " in message and "table.select(lineage_store.SCHEMA.names).cast(lineage_store.SCHEMA)" in message
    # The hint is true: that cast conforms the table, and it is then accepted.
    fixed = natural.select(ls.SCHEMA.names).cast(ls.SCHEMA)
    assert ls.check(fixed) == []
    assert sum(c.row_count for c in ls.open(root).append(fixed)) == 6


def test_an_empty_table_of_another_schema_is_refused_as_append_refuses_it(tmp_path: Path) -> None:
    import polars as pl

    good = events(6)
    i = good.schema.get_field_index("strategy_index")
    wrong = good.set_column(i, "strategy_index", good.column(i).cast(pa.int64()))
    # No rows to look at: the schema alone is held to the contract, as `append` holds it.
    for empty in (wrong.slice(0, 0), pl.from_arrow(wrong).clear()):
        got = ls.check(empty)
        assert [e["field"] for e in got] == ["strategy_index"], got
        assert "has type Int64, the contract expects Int32" in got[0]["reason"]
        with pytest.raises(ls.InputError) as e:
            ls.open(tmp_path / "store").append(empty)
        assert [x["field"] for x in e.value.errors] == ["strategy_index"]
    # The same file without rows is refused by `lineage check` too.
    cli = cli_check(write_ipc(wrong.slice(0, 0), tmp_path / "empty.arrow"))
    assert [e["field"] for e in cli["errors"]] == ["strategy_index"]
    # An empty table in the contract is valid: an append would do nothing.
    assert ls.check(good.slice(0, 0)) == []
    assert not (tmp_path / "store").exists()


def test_check_takes_the_schema_version_an_append_would_write(tmp_path: Path) -> None:
    t = events(5)
    assert ls.check(t, schema_version="1.2.0") == []
    assert ls.check(write_ipc(t, tmp_path / "ok.arrow"), schema_version="1.2.0") == []
    with pytest.raises(ls.InputError, match="9.0.0"):
        ls.check(t, schema_version="9.0.0")


def test_append_lists_max_errors_and_counts_them_all(tmp_path: Path) -> None:
    bad = bad_table()  # rows 5, 18, 31
    every = ls.check(bad)
    store = ls.open(tmp_path / "store")
    with pytest.raises(ls.InputError) as e:
        store.append(bad)
    assert e.value.errors == every, "the default lists 20"
    for max_errors, listed in ((2, 2), (0, 3), (1, 1)):
        with pytest.raises(ls.InputError) as e:
            store.append(bad, max_errors=max_errors)
        assert e.value.errors == every[:listed], max_errors
        if listed < 3:
            assert f"and {3 - listed} more" in str(e.value), str(e.value)
    # A file: the same, through append_file.
    path = write_ipc(bad, tmp_path / "bad.arrow")
    with pytest.raises(ls.InputError) as e:
        store.append_file(path, max_errors=1)
    assert e.value.errors == every[:1]
    assert "3 in all" in str(e.value)
    assert snapshot(tmp_path / "store") == {}


def test_the_polars_fix_in_a_refusal_is_code_that_works(tmp_path: Path) -> None:
    import re

    import polars as pl

    df = pl.from_arrow(events(8))
    assert isinstance(df, pl.DataFrame)
    # Polars' defaults: a plain Int64 index and nanosecond times.
    natural = df.with_columns(
        pl.col("strategy_index").cast(pl.Int64),
        pl.col("event_time_utc").cast(pl.Datetime("ns", "UTC")),
    )
    store = ls.open(tmp_path / "store")
    with pytest.raises(ls.InputError) as e:
        store.append(natural)
    message = str(e.value)
    found = re.search(r"df\.cast\((\{[^}]*\})\)", message)
    assert found, message
    # Run the fix exactly as the message writes it.
    fixed = eval(f"df.cast({found.group(1)})", {"pl": pl, "df": natural})
    assert ls.check(fixed) == []
    assert sum(c.row_count for c in store.append(fixed)) == 8
