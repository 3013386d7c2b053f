"""lineage_store: append-only, tamper-evident lineage events as Parquet, from Python.

The same library as the ``lineage`` CLI, in-process: events validated exactly as the CLI
validates them, one immutable Parquet part per flush, published create-only with a
pointer holding its sha256; ``verify`` proves every recorded part present and
byte-identical.

>>> import lineage_store
>>> store = lineage_store.open("lineage-store-demo")          # or s3://bucket/prefix, ...
>>> commits = store.append(table)                              # pyarrow, Polars, DuckDB, ...
>>> store.verify().clean
True

``append`` is strict: it casts nothing. ``lineage_store.conform(data)`` makes the
conversions that change no value (``int64`` to ``int32`` checked, nanoseconds without a
sub-microsecond part, any zone to UTC, ...) when asked, and says what it changed.

Arrow data crosses through the Arrow C data interface (``__arrow_c_stream__`` /
``__arrow_c_array__``): nothing imports pyarrow unless you ask for ``SCHEMA`` or
``Store.log()``. Calls release the GIL while they read, validate, encode, hash and write.
``lineage_store.Run`` builds the events of a job (ids, sequence numbers, times, the run's
defaults) and feeds a writer; ``lineage_store.geo`` (the ``geo`` extra: pyproj) transforms
geometries and coordinates with one event per feature (docs/geo.md).

See docs/python.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import (
    ConflictError,
    InputError,
    IntegrityError,
    LineageError,
    StoreError,
    VerifyError,
)
from ._run import OPERATION_COLUMNS, Run
from ._native import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_MAX_IN_FLIGHT,
    SCHEMA_VERSION,
    SCHEMA_VERSIONS,
    Commit,
    Conformed,
    PartRef,
    Problem,
    Proof,
    ProofSummary,
    Seal,
    Store,
    VerifyReport,
    Writer,
    canonical_crs,
    check,
    conform,
    contract_schema,
    keygen,
    merge_reports,
    open,
    read_part,
    render_report,
    set_read_limits,
    verify_proof,
)

if TYPE_CHECKING:
    import pyarrow

    #: The contract's 1.2.0 (15 columns, which every version has) as a ``pyarrow.Schema``,
    #: with ``lineage_schema_version`` in its metadata; ``contract_schema("1.3.0")`` is
    #: 1.3.0's. Built on first access (it imports pyarrow).
    SCHEMA: pyarrow.Schema

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_MAX_IN_FLIGHT",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SCHEMA_VERSIONS",
    "Commit",
    "Conformed",
    "ConflictError",
    "IntegrityError",
    "InputError",
    "LineageError",
    "OPERATION_COLUMNS",
    "PartRef",
    "Problem",
    "Proof",
    "ProofSummary",
    "Run",
    "Seal",
    "Store",
    "StoreError",
    "VerifyError",
    "VerifyReport",
    "Writer",
    "canonical_crs",
    "check",
    "conform",
    "contract_schema",
    "keygen",
    "merge_reports",
    "open",
    "read_part",
    "render_report",
    "set_read_limits",
    "verify_proof",
]


def __getattr__(name: str) -> Any:
    # SCHEMA is built lazily so that `import lineage_store` never imports pyarrow.
    if name == "SCHEMA":
        from ._native import contract_schema

        schema = contract_schema()
        globals()["SCHEMA"] = schema
        return schema
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
