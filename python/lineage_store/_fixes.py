"""The lines a refused schema's ``InputError`` ends with: the cast that fixes it, in the
library the data came from (pyarrow, pandas, Polars, DuckDB), and ``lineage_store.conform``
where its lossless conversions are enough. Called by the extension; each line is code the
caller can run as it is (the tests run it)."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

# (kind, field, got kind, got type, contract type, convertible by conform)
Mismatch = Tuple[str, str, Optional[str], Optional[str], Optional[str], bool]

_POLARS = {
    "int32": "pl.Int32",
    "int64": "pl.Int64",
    "float64": "pl.Float64",
    "string": "pl.String",
    "timestamp_us_utc": 'pl.Datetime("us", "UTC")',
}
_SQL = {
    "int32": "INTEGER",
    "int64": "BIGINT",
    "float64": "DOUBLE",
    "string": "VARCHAR",
    "timestamp_us_utc": "TIMESTAMPTZ",
}


def _polars(types: Sequence[Mismatch]) -> str:
    exprs = []
    casts = []
    for _, f, g, _, w, _ in types:
        if g == "naive_timestamp":
            # A naive Datetime holds wall-clock times: say which zone they are in.
            exprs.append(f'pl.col("{f}").dt.replace_time_zone("UTC").dt.cast_time_unit("us")')
        elif g == "timestamp":
            exprs.append(f'pl.col("{f}").dt.cast_time_unit("us")')
        else:
            casts.append(f'"{f}": {_POLARS[w or "string"]}')
    code = "df = df"
    if exprs:
        code += f".with_columns({', '.join(exprs)})"
    if casts:
        code += f".cast({{{', '.join(casts)}}})"
    return code


def _sql(types: Sequence[Mismatch]) -> str:
    items = []
    for _, f, g, _, w, _ in types:
        if g == "naive_timestamp":
            # A TIMESTAMP holds wall-clock times: say which zone they are in.
            items.append(f"timezone('UTC', {f}) AS {f}")
        else:
            items.append(f"CAST({f} AS {_SQL[w or 'string']}) AS {f}")
    return f'rel = rel.project("* REPLACE ({", ".join(items)})")'


_PYARROW = {
    "int32": "pa.int32()",
    "int64": "pa.int64()",
    "float64": "pa.float64()",
    "string": "pa.string()",
    "timestamp_us_utc": 'pa.timestamp("us", tz="UTC")',
}


def _columns(producer: str, columns: Sequence[Mismatch]) -> list[str]:
    """Lines that add a missing column (all null) or drop an extra one."""
    missing = [(f, w or "string") for k, f, _, _, w, _ in columns if k == "missing"]
    extra = [f for k, f, _, _, _, _ in columns if k == "extra"]
    twice = [f for k, f, _, _, _, _ in columns if k == "duplicate"]
    lines = []
    if producer == "polars":
        if missing:
            adds = ", ".join(f'pl.lit(None, dtype={_POLARS[w]}).alias("{f}")' for f, w in missing)
            lines.append(f"df = df.with_columns({adds})")
        if extra:
            lines.append(f"df = df.drop({extra!r})")
    elif producer == "duckdb":
        items = ["*" + (f" EXCLUDE ({', '.join(extra)})" if extra else "")]
        items += [f"NULL::{_SQL[w]} AS {f}" for f, w in missing]
        if missing or extra:
            lines.append(f'rel = rel.project("{", ".join(items)}")')
    elif producer == "pandas":
        for f, _ in missing:
            lines.append(f'df["{f}"] = None')
        if extra:
            lines.append(f"df = df.drop(columns={extra!r})")
    else:
        for f, w in missing:
            lines.append(f'table = table.append_column("{f}", pa.nulls(table.num_rows, {_PYARROW[w]}))')
        if extra:
            lines.append(f"table = table.drop_columns({extra!r})")
    for f in twice:
        lines.append(f"rename or drop the second column `{f}`")
    return lines


def _uuids(producer: str, types: Sequence[Mismatch]) -> list[str]:
    """Lines that write UUIDs (16 bytes: DuckDB's UUID, ``pa.uuid()``) as their text form,
    which no cast does in pyarrow or pandas (DuckDB's ``CAST(... AS VARCHAR)`` does)."""
    lines = []
    for _, f, g, _, _, _ in types:
        if g != "uuid":
            continue
        if producer == "pandas":
            lines.append(f'df["{f}"] = df["{f}"].map(lambda u: None if u is None else str(u))')
        elif producer == "pyarrow":
            text = (f'pa.array([None if u is None else str(u if isinstance(u, uuid.UUID) else '
                    f'uuid.UUID(bytes=u)) for u in table["{f}"].to_pylist()], pa.string())')
            lines.append(f'import uuid; table = table.set_column('
                         f'table.schema.get_field_index("{f}"), "{f}", {text})')
    return lines


def schema_fix(producer: str, mismatches: Sequence[Mismatch]) -> str:
    """The fix lines for ``mismatches`` of data from ``producer`` (see the module docs)."""
    types = [m for m in mismatches if m[0] == "type"]
    columns = [m for m in mismatches if m[0] != "type"]
    lines = []
    if columns:
        lines += [f"fix in {producer}: {line}" for line in _columns(producer, columns)]
    if types:
        lines += [f"fix in {producer}: {line}" for line in _uuids(producer, types)]
        if producer == "polars":
            code = _polars(types)
        elif producer == "duckdb":
            code = _sql(types) + "  (in SQL: SELECT * REPLACE (...) FROM ...)"
        elif producer == "pandas":
            code = "table = pa.Table.from_pandas(df, schema=lineage_store.SCHEMA, preserve_index=False)"
        else:
            code = "table = table.select(lineage_store.SCHEMA.names).cast(lineage_store.SCHEMA)"
        lines.append(f"fix in {producer}: {code}")
        if not columns and all(m[5] for m in types):
            lines.append(
                "or lineage_store.conform(data): the same conversions, made only where no value "
                "changes (checked value by value), saying what it changed"
            )
    return "\n".join(lines)
