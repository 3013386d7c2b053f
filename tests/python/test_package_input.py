"""The Python package's `append`: every kind of Arrow input gives the parts the CLI writes
for the same events, byte for byte (same commit ids through a commit key); every kind of
refused input raises InputError with the CLI's message, row and field, and publishes
nothing."""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import lineage_store as ls
from pkg_support import (
    added_lines,
    cli_error,
    cli_pointers,
    event,
    events,
    lineage,
    snapshot,
    without_commit_time,
    write_ipc,
)

N = 600
BATCH = 64
KEY = "nightly-2026-07-13"


class StreamOnly:
    """A producer with nothing but the PyCapsule stream protocol."""

    def __init__(self, table: pa.Table) -> None:
        self._t = table

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self._t.__arrow_c_stream__(requested_schema)


class ArrayOnly:
    """A producer with nothing but the PyCapsule array protocol (one struct array)."""

    def __init__(self, table: pa.Table) -> None:
        self._b = table.combine_chunks().to_batches()[0]

    def __arrow_c_array__(self, requested_schema: object = None) -> tuple[object, object]:
        pair: tuple[object, object] = self._b.__arrow_c_array__(requested_schema)
        return pair


def duckdb_relation(table: pa.Table) -> duckdb.DuckDBPyRelation:
    con = duckdb.connect()
    return con.from_arrow(table)


def reader_of(table: pa.Table) -> pa.RecordBatchReader:
    # Batches from a generator: the stream is pulled while the GIL is released.
    return pa.RecordBatchReader.from_batches(table.schema, (b for b in table.to_batches(max_chunksize=50)))


INPUTS = {
    "pyarrow.Table": lambda t: t,
    "pyarrow.Table (many chunks)": lambda t: pa.Table.from_batches(t.to_batches(max_chunksize=37)),
    "pyarrow.RecordBatch": lambda t: t.combine_chunks().to_batches()[0],
    "pyarrow.RecordBatchReader": reader_of,
    "polars.DataFrame": lambda t: pl.from_arrow(t),
    "duckdb relation": duckdb_relation,
    "__arrow_c_stream__ only": StreamOnly,
    "__arrow_c_array__ only": ArrayOnly,
}


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return events(N, runs=("run-a", "run-b", "run-c"))


@pytest.fixture(scope="module")
def cli_store(tmp_path_factory: pytest.TempPathFactory, table: pa.Table) -> tuple[Path, list[dict[str, Any]]]:
    """The CLI's store for the same events, same flushes, same commit key."""
    d = tmp_path_factory.mktemp("cli")
    src = write_ipc(table, d / "events.arrow")
    store = d / "store"
    r = lineage("append", "--store", str(store), "--input", str(src), "--batch-rows", str(BATCH),
                "--commit-key", KEY, "--json")
    assert r.returncode == 0, r.stderr
    return store, cli_pointers(r.stdout)


@pytest.mark.parametrize("kind", list(INPUTS))
def test_every_input_kind_writes_the_clis_parts_byte_for_byte(kind: str, table: pa.Table, cli_store: tuple[Path, list[dict[str, Any]]],
                                                             tmp_path: Path) -> None:
    cli_root, cli_ptrs = cli_store
    # Parts name the store they are written to: both stores share the CLI store's identity.
    (tmp_path / "store" / "_lineage").mkdir(parents=True)
    (tmp_path / "store" / "_lineage" / "store.json").write_bytes(
        (cli_root / "_lineage" / "store.json").read_bytes())
    store = ls.open(tmp_path / "store")
    commits = store.append(INPUTS[kind](table), batch_rows=BATCH, commit_key=KEY)
    # The same commits (ids derived from the key, per partition and flush index); the
    # order they were cut in follows how the input was chunked.
    by_id = {p["commit_id"]: p for p in cli_ptrs}
    assert sorted(c.commit_id for c in commits) == sorted(by_id)
    assert sum(c.row_count for c in commits) == N
    for c in commits:
        p = by_id[c.commit_id]
        assert without_commit_time(c.to_dict()) == without_commit_time(p)
        ours = (tmp_path / "store" / c.part_path).read_bytes()
        assert ours == (cli_root / p["part_path"]).read_bytes(), c.part_path
    assert store.verify().clean


def test_every_value_reads_back_and_unkeyed_appends_equal_the_clis_rows(table: pa.Table, tmp_path: Path) -> None:
    src = write_ipc(table, tmp_path / "events.arrow")
    r = lineage("append", "--store", str(tmp_path / "cli"), "--input", str(src), "--batch-rows", "100")
    assert r.returncode == 0, r.stderr
    ls.open(tmp_path / "py").append(pl.from_arrow(table), batch_rows=100)

    def rows(root: Path) -> list[dict[str, Any]]:
        t = ds.dataset(root, format="parquet").to_table(columns=table.column_names)
        return sorted(t.to_pylist(), key=lambda r: r["event_id"])

    ours = rows(tmp_path / "py")
    assert ours == rows(tmp_path / "cli")
    want = sorted(table.to_pylist(), key=lambda r: r["event_id"])
    for got, w in zip(ours, want, strict=True):
        # CRSs are canonicalised; every other value is exactly the input's.
        assert got["target_crs"] == ls.canonical_crs(w["target_crs"])
        assert got["source_crs"] == (w["source_crs"] and ls.canonical_crs(w["source_crs"]))
        for k in set(w) - {"target_crs", "source_crs"}:
            assert got[k] == w[k], k


def test_polars_without_pyarrow_imported(tmp_path: Path) -> None:
    """Another producer needs no pyarrow: Polars data is appended, logged and verified
    in a process that never imports pyarrow."""
    code = f"""
import datetime as dt, sys
import polars as pl
import lineage_store as ls
n = 30
df = pl.DataFrame({{
    "event_id": [f"e{{i}}" for i in range(n)], "run_id": ["run-pl"] * n,
    "sequence": list(range(n)),
    "event_time_utc": pl.Series([dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)] * n, dtype=pl.Datetime("us", "UTC")),
    "stage": ["reproject"] * n, "event_type": ["crs_transform"] * n,
    "feature_id": [f"f{{i}}" for i in range(n)], "source_crs": ["EPSG:4258"] * n,
    "target_crs": ["urn:ogc:def:crs:EPSG::25832"] * n, "outcome": ["transformed"] * n,
    "strategy_index": pl.Series([0] * n, dtype=pl.Int32), "accuracy_m": [0.5] * n,
    "rejection_reason": pl.Series([None] * n, dtype=pl.String), "tool_version": ["t/1"] * n,
    "audit_tag": pl.Series([None] * n, dtype=pl.String),
}})
store = ls.open({str(tmp_path / "store")!r})
commits = store.append(df, batch_rows=7)
assert sum(c.row_count for c in commits) == n and len(commits) == 5, commits
assert store.verify().clean
assert [c.commit_id for c in store.commits()] == [c.commit_id for c in sorted(commits, key=lambda c: (c.committed_utc, c.commit_id))]
assert "pyarrow" not in sys.modules, "pyarrow was imported"
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_an_empty_input_commits_nothing(tmp_path: Path) -> None:
    store = ls.open(tmp_path / "store")
    assert store.append(events(0)) == []
    assert store.commits() == []


def test_a_commit_key_reused_for_other_events_is_a_conflict(tmp_path: Path) -> None:
    store = ls.open(tmp_path / "store")
    first = store.append(events(20), commit_key="job-1")
    # A retry of the same job re-publishes the same commits.
    assert store.append(events(20), commit_key="job-1") == first
    before = snapshot(tmp_path / "store")
    with pytest.raises(ls.ConflictError) as e:
        store.append(events(21), commit_key="job-1")
    assert str(e.value) == cli_error("append", "--store", str(tmp_path / "store"), "--commit-key", "job-1",
                                     "--input", str(write_ipc(events(21), tmp_path / "e21.arrow")))
    assert snapshot(tmp_path / "store") == before


# ---- refused input ----------------------------------------------------------------------

ROW = 13  # 1-based row the row-rule cases break (index 12)


def set_value(t: pa.Table, name: str, value: Any) -> pa.Table:
    col = t.column(name).to_pylist()
    col[ROW - 1] = value
    i = t.schema.get_field_index(name)
    return t.set_column(i, t.schema.field(i), pa.array(col, t.schema.field(i).type))


def retype(t: pa.Table, name: str, typ: pa.DataType, values: Optional[list[Any]] = None) -> pa.Table:
    i = t.schema.get_field_index(name)
    arr = pa.array(values, typ) if values is not None else t.column(name).cast(typ)
    return t.set_column(i, pa.field(name, typ), arr)


def base() -> pa.Table:
    return events(20, runs=("run-a",))


# (name, refused table, expected field, expected row or None for schema errors)
REFUSED = [
    ("missing field", lambda: base().drop_columns(["audit_tag"]), "audit_tag", None),
    ("extra field", lambda: base().append_column("note", pa.array(["x"] * 20)), "note", None),
    ("int32 sequence", lambda: retype(base(), "sequence", pa.int32()), "sequence", None),
    ("naive timestamp", lambda: retype(base(), "event_time_utc", pa.timestamp("us"),
                                       [r.replace(tzinfo=None) for r in base().column("event_time_utc").to_pylist()]),
     "event_time_utc", None),
    ("nanosecond timestamp", lambda: retype(base(), "event_time_utc", pa.timestamp("ns", tz="UTC")),
     "event_time_utc", None),
    ("null required field", lambda: set_value(base(), "feature_id", None), "feature_id", ROW),
    ("empty string", lambda: set_value(base(), "stage", ""), "stage", ROW),
    ("unsafe run_id", lambda: set_value(base(), "run_id", "../etc"), "run_id", ROW),
    ("reserved run_id", lambda: set_value(base(), "run_id", "_lineage"), "run_id", ROW),
    ("unknown EPSG code", lambda: set_value(base(), "target_crs", "EPSG:99999"), "target_crs", ROW),
    ("OGC:CRS84", lambda: set_value(base(), "source_crs", "OGC:CRS84"), "source_crs", ROW),
    ("bare number CRS", lambda: set_value(base(), "target_crs", "4326"), "target_crs", ROW),
    ("rejected without reason", lambda: set_value(set_value(base(), "outcome", "rejected"), "rejection_reason", None),
     "rejection_reason", ROW),
    ("negative accuracy", lambda: set_value(base(), "accuracy_m", -0.5), "accuracy_m", ROW),
    ("NaN accuracy", lambda: set_value(base(), "accuracy_m", math.nan), "accuracy_m", ROW),
    ("negative strategy_index", lambda: set_value(base(), "strategy_index", -1), "strategy_index", ROW),
]


@pytest.fixture()
def used_store(tmp_path: Path) -> tuple[ls.Store, Path]:
    """A store that already holds a commit (refusals must leave it byte for byte)."""
    root = tmp_path / "store"
    store = ls.open(root)
    store.append(events(5, runs=("run-z",)))
    return store, root


@pytest.mark.parametrize("name,make,field,row", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_input_names_row_and_field_as_the_cli_and_publishes_nothing(
        name: str, make: Callable[[], pa.Table], field: str, row: Optional[int], used_store: tuple[ls.Store, Path],
        tmp_path: Path) -> None:
    store, root = used_store
    bad = make()
    before = snapshot(root)
    with pytest.raises(ls.InputError) as e:
        store.append(bad)
    assert e.value.field == field
    assert e.value.row == row
    assert e.value.reason and e.value.reason in str(e.value)
    # Exactly the message the CLI prints for the same events in an Arrow IPC file (every
    # line: one per error, and its hint); a refused schema then says how to fix it in
    # pyarrow (the code runs as written).
    fix = added_lines(str(e.value), cli_error("append", "--store", str(root), "--input",
                                              str(write_ipc(bad, tmp_path / "bad.arrow"))))
    assert snapshot(root) == before
    if row is None:
        code = [l.split(": ", 1)[1] for l in fix if l.startswith("fix in pyarrow: ")]
        assert code, fix
        if name != "naive timestamp":  # which zone a naive time is in is the caller's call
            namespace = {"pa": pa, "lineage_store": ls, "table": bad}
            for c in code:
                exec(c, namespace)
            store.append(namespace["table"])
            before = snapshot(root)
    else:
        assert fix == []
    # The same through a Polars DataFrame, where Polars can express it.
    with pytest.raises(ls.InputError):
        store.append(pl.from_arrow(bad) if name != "naive timestamp" else bad)
    assert snapshot(root) == before


@pytest.mark.parametrize("name,make", [
    ("reordered fields", lambda: base().select([1, 0] + list(range(2, 15)))),
    ("dictionary strings", lambda: retype(base(), "stage", pa.dictionary(pa.int32(), pa.string()),
                                          base().column("stage").to_pylist())),
    ("large strings", lambda: retype(base(), "feature_id", pa.large_string())),
])
def test_columns_by_name_and_lossless_string_encodings_are_taken_as_the_cli_takes_them(
        name: str, make: Callable[[], pa.Table], tmp_path: Path) -> None:
    """The CLI matches Arrow IPC columns by name and re-encodes strings losslessly: so does
    the package, and both store the same values as for the plain contract table."""
    def stored(root: Path) -> list[dict[str, Any]]:
        import pyarrow.parquet as pq
        rows = [r for p in sorted(root.glob("run_id=*/target_crs=*/part-*.parquet"))
                for r in pq.ParquetFile(p).read().to_pylist()]
        return sorted(rows, key=lambda e: e["sequence"])

    odd = make()
    commits = ls.open(str(tmp_path / "py")).append(odd)
    assert sum(c.row_count for c in commits) == 20
    ls.open(str(tmp_path / "plain")).append(base())
    r = lineage("append", "--store", str(tmp_path / "cli"), "--input",
                str(write_ipc(odd, tmp_path / "odd.arrow")))
    assert r.returncode == 0, r.stderr
    want = stored(tmp_path / "plain")
    assert len(want) == 20
    assert stored(tmp_path / "py") == want
    assert stored(tmp_path / "cli") == want


def test_a_bad_row_in_a_later_batch_is_numbered_across_the_input(used_store: tuple[ls.Store, Path]) -> None:
    store, root = used_store
    t = events(300, runs=("run-a",))
    col = t.column("target_crs").to_pylist()
    col[250] = "OGC:CRS84"
    bad = t.set_column(8, "target_crs", pa.array(col))
    before = snapshot(root)
    with pytest.raises(ls.InputError) as e:
        store.append(reader_of(bad))  # batches of 50: row 251 is row 1 of the sixth
    assert (e.value.row, e.value.field) == (251, "target_crs")
    assert str(e.value).startswith("row 251, field `target_crs`: `OGC:CRS84` is OGC:CRS84")
    assert snapshot(root) == before


class Raises:
    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        raise RuntimeError("the producer broke")


def failing_reader() -> pa.RecordBatchReader:
    t = events(100, runs=("run-a",))

    def gen() -> Iterator[pa.RecordBatch]:
        yield t.to_batches()[0]
        raise OSError("the upstream file vanished")

    return pa.RecordBatchReader.from_batches(t.schema, gen())


def invalid_utf8() -> pa.Table:
    t = events(3, runs=("run-a",))
    bad = pa.Array.from_buffers(pa.string(), 3, [None, pa.py_buffer(b"\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00"),
                                                 pa.py_buffer(b"a\xffb")])
    return t.set_column(6, "feature_id", bad)


@pytest.mark.parametrize("data,message", [
    (42, "expected Arrow data"),
    ({"event_id": ["x"]}, "expected Arrow data"),
    (Raises(), "cannot take the Arrow data from a Raises (__arrow_c_stream__)"),
    (failing_reader(), "reading the Arrow stream failed"),
    (invalid_utf8(), "the producer's Arrow data for field `feature_id` is invalid"),
], ids=["int", "dict", "raising producer", "stream failing midway", "invalid UTF-8"])
def test_what_is_not_valid_arrow_is_refused_and_publishes_nothing(data: Any, message: str,
                                                                   used_store: tuple[ls.Store, Path]) -> None:
    store, root = used_store
    before = snapshot(root)
    with pytest.raises(ls.InputError) as e:
        store.append(data)
    assert message in str(e.value)
    assert snapshot(root) == before


def test_usage_errors_are_input_errors_with_the_clis_message(used_store: tuple[ls.Store, Path], tmp_path: Path) -> None:
    store, root = used_store
    with pytest.raises(ls.InputError) as e:
        store.append(events(3), batch_rows=0)
    # The CLI's message, naming the keyword argument the caller passed, not the CLI's flag.
    cli = cli_error("append", "--store", str(root), "--batch-rows", "0",
                    "--input", str(write_ipc(events(3), tmp_path / "e.arrow")))
    assert cli == "--batch-rows must be at least 1"
    assert str(e.value) == "batch_rows must be at least 1"
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: store.append(events(3), commit_key=""), "commit_key must be 1 to 256 printable characters"),
        (lambda: store.append(events(3).to_reader(), batch_rows=0), "batch_rows must be at least 1"),
        (lambda: store.verify(since_seal=7), "since_seal 7: the store has no seal 7"),
        (lambda: store.verify(expect_head="x"), 'expect_head="x" is not a sha256 (64 hex digits)'),
        (lambda: ls.open(tmp_path / "e.arrow"), f"store {tmp_path / 'e.arrow'}: is a file"),
        (lambda: ls.open("s3://b/p", endpoint_url="ftp://x"), "S3 endpoint \"ftp://x\" (from endpoint_url,"),
    ]
    for call, said in calls:
        with pytest.raises(ls.InputError) as e:
            call()
        assert str(e.value).startswith(said), str(e.value)
        assert "--" not in str(e.value), str(e.value)
    with pytest.raises(ls.InputError, match="not an EPSG CRS identifier"):
        ls.canonical_crs("WGS 84")
    assert ls.canonical_crs("urn:ogc:def:crs:EPSG::4326") == "EPSG:4326"
    with pytest.raises(ls.InputError, match="unsupported store scheme `ftp://`"):
        ls.open("ftp://example/x")


def outside_cli_commands(message: str) -> str:
    """`message` without the CLI commands it quotes (`` `lineage seal --rescan` ``): what
    the package has no keyword for is named as the CLI command that has it."""
    return re.sub(r"`lineage [^`]*`", "", message)


def test_messages_from_python_name_keyword_arguments_not_cli_flags(tmp_path: Path) -> None:
    """Every message a Python caller gets (exceptions, verify's problems, a proof summary)
    names the keyword argument it passed, or the CLI command that has what it lacks; never
    a bare CLI flag. Before, these said `--format`, `--public-key`, `--force`,
    `--signing-key`/`--unsigned`, `--signed-from`, `--columns`, `--as-of-seal`, `--store`."""
    store = ls.open(tmp_path / "store")
    first = store.append(events(10, runs=("run-m",)))
    store.seal()
    ls.keygen(tmp_path / "k")
    (tmp_path / "x.xyz").write_text("{}")
    said: list[str] = []

    def refused(call: Callable[[], object], cls: type[Exception] = ls.InputError) -> str:
        with pytest.raises(cls) as e:
            call()
        said.append(str(e.value))
        return str(e.value)

    assert refused(lambda: ls.keygen(tmp_path / "k")).endswith(
        "refusing to overwrite a key (`lineage keygen --force` replaces it)")
    assert refused(lambda: ls.check(str(tmp_path / "x.xyz"))).endswith("from its extension; pass format")
    assert refused(lambda: store.append_file(tmp_path / "x.xyz")).endswith("from its extension; pass format")
    assert refused(lambda: store.scan(columns=["nope"])).startswith('columns no column "nope"')
    assert refused(lambda: store.scan(as_of_seal=9)) == "as_of_seal 9: the store's seals are 1..=1"
    assert refused(lambda: store.files(as_of_seal=9)) == "as_of_seal 9: the store's seals are 1..=1"
    assert refused(lambda: ls.open("")) == "no store given: pass store or set LINEAGE_STORE"
    # verify with a key over an unsigned seal: the problem, and the VerifyError's text.
    report = store.verify(public_key=tmp_path / "k.pub")
    said += [p.message for p in report.problems] + [str(p) for p in report.problems]
    assert report.problems[0].message.endswith(
        "(seals signed only from a later seal on: signed_from SEQ)")
    refused(lambda: store.verify(public_key=tmp_path / "k.pub", check=True), ls.VerifyError)
    # A signed seal: the proof's summary without a key, then an unsigned seal after it.
    store.append(events(5, runs=("run-n",)))
    head = store.seal(tmp_path / "k.key").head
    summary = ls.verify_proof(store.prove(first[0].commit_id, head), head)
    assert summary.signed_by is not None
    said.append(summary.signed_by)
    assert summary.signed_by.endswith("(the key the seal names; pass public_key to check it is the trusted one)")
    store.append(events(5, runs=("run-o",)))
    assert "sign this one too (signing_key), or pass allow_unsigned=True to publish an unsigned seal " \
           "after signed ones (verify signed_from then reports it)" in refused(lambda: store.seal())
    for message in said:
        assert "--" not in outside_cli_commands(message), message


def test_the_schema_is_the_contract_with_its_version() -> None:
    assert ls.SCHEMA_VERSION == "1.2.0"
    assert ls.SCHEMA.metadata == {b"lineage_schema_version": b"1.2.0"}
    r = lineage("schema", "--json", "--schema-version", "1.2.0")
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)["fields"]
    assert ls.SCHEMA.names == [f["name"] for f in cli] == list(event(1))
    # The newest version (what `lineage schema` prints) is 1.3.0: 1.2.0's columns, then six.
    newest = json.loads(lineage("schema", "--json").stdout)
    assert ls.SCHEMA_VERSIONS == ["1.2.0", "1.3.0"] and newest["schema_version"] == "1.3.0"
    v13 = ls.contract_schema("1.3.0")
    assert v13.names == [f["name"] for f in newest["fields"]] and v13.names[:15] == ls.SCHEMA.names
    assert v13.metadata == {b"lineage_schema_version": b"1.3.0"}
    assert str(v13.field("degraded").type) == "bool"
    assert all(f.nullable for f in ls.SCHEMA)  # as the design note's pa.schema makes them
    assert str(ls.SCHEMA.field("event_time_utc").type) == "timestamp[us, tz=UTC]"


def test_the_benchmarks_boundary_probe_takes_the_data_and_publishes_nothing(tmp_path: Path) -> None:
    from lineage_store import _native

    for kind in ("pyarrow.Table (many chunks)", "polars.DataFrame", "__arrow_c_array__ only"):
        assert _native._arrow_import_check(INPUTS[kind](events(70))) == 70
    with pytest.raises(ls.InputError, match="the producer's Arrow data for field `feature_id` is invalid"):
        _native._arrow_import_check(invalid_utf8())
