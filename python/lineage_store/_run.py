"""``Run``: the events of one job, built with the run's defaults and fed to a writer.

A job (geo or not) makes one ``Run`` and says what happened to each feature:
``run.transformed(...)``, ``run.mapped(...)``, ``run.rejected(..., reason)``. The run
fills what every event of the run shares (run id, tool version, audit tag, stage, input
dataset and version), numbers the events (``sequence`` from ``first_sequence``, in call
order), gives each a deterministic ``event_id`` (``<run_id>-<sequence:09d>``) and a
timestamp from its clock, and hands them to a ``Writer`` in chunks (or returns them as a
pyarrow table). A rerun that records the same features in the same order rebuilds the
same ids and sequences, so a writer with a commit key and ``resume=True`` keeps what the
killed attempt committed and writes the rest.

Nothing here imports pyarrow until a table is built. See docs/geo.md.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    import pyarrow

    from ._native import Commit, Writer

#: The columns of contract 1.3.0 that follow the 15 of 1.2.0 (all nullable).
OPERATION_COLUMNS = (
    "operation_code",
    "operation_name",
    "grids",
    "degraded",
    "input_dataset",
    "input_version",
)
_BASE_COLUMNS = (
    "event_id",
    "run_id",
    "sequence",
    "event_time_utc",
    "stage",
    "event_type",
    "feature_id",
    "source_crs",
    "target_crs",
    "outcome",
    "strategy_index",
    "accuracy_m",
    "rejection_reason",
    "tool_version",
    "audit_tag",
)
COLUMNS = _BASE_COLUMNS + OPERATION_COLUMNS
# What the run fills in every event (a call cannot set them).
_FILLED = ("event_id", "run_id", "sequence", "event_time_utc", "tool_version", "audit_tag",
           "input_dataset", "input_version", "outcome", "stage", "feature_id")

Clock = Callable[[], dt.datetime]
#: One value for every event of a call, or a sequence (list, numpy array, ...) of one per event.
Values = Any


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def event_schema() -> "pyarrow.Schema":
    """The contract version a run's events are built in: 1.3.0 (1.2.0's 15 columns and
    ``OPERATION_COLUMNS``), as ``lineage_store.contract_schema("1.3.0")``."""
    from ._native import contract_schema

    return contract_schema("1.3.0")


class Run:
    """The events of one run, with its defaults, numbered in call order.

    ``run_id``, ``tool_version`` (required by the contract), ``audit_tag``, ``stage``,
    ``input_dataset`` and ``input_version`` are the defaults of every event; a call may
    override ``stage``. ``clock`` returns the time of an event (a zone-aware
    ``datetime``; default: now, UTC); it is called once per recording call, so a bulk
    call's events share one time. ``writer``: a ``Writer`` (``store.writer(...)``) that
    receives the events every ``chunk_rows`` events and at ``flush()``/``close()``;
    without one, ``table()``/``drain()`` return them.
    """

    def __init__(
        self,
        run_id: str,
        *,
        tool_version: str,
        audit_tag: Optional[str] = None,
        stage: str = "process",
        input_dataset: Optional[str] = None,
        input_version: Optional[str] = None,
        clock: Optional[Clock] = None,
        writer: Optional["Writer"] = None,
        chunk_rows: int = 10_000,
        first_sequence: int = 1,
    ) -> None:
        if not run_id:
            raise ValueError("run_id must not be empty")
        if not tool_version:
            raise ValueError("tool_version must not be empty (the contract requires it)")
        if chunk_rows < 1:
            raise ValueError("chunk_rows must be at least 1")
        self.run_id = run_id
        self.tool_version = tool_version
        self.audit_tag = audit_tag
        self.stage = stage
        self.input_dataset = input_dataset
        self.input_version = input_version
        self.clock: Clock = clock or _utc_now
        self.writer = writer
        self.chunk_rows = chunk_rows
        self.next_sequence = first_sequence
        self.recorded = 0
        #: Events recorded and not yet handed to the writer or drained.
        self.pending = 0
        self._chunks: List[Tuple[int, int, Dict[str, Any]]] = []

    # -- recording ---------------------------------------------------------------------

    def transformed(
        self,
        feature_id: Values,
        *,
        source_crs: Optional[str],
        target_crs: str,
        event_type: str = "crs_transform",
        stage: Optional[str] = None,
        accuracy_m: Values = None,
        strategy_index: Values = None,
        operation_code: Values = None,
        operation_name: Values = None,
        grids: Values = None,
        degraded: Values = None,
    ) -> int:
        """Record features transformed from ``source_crs`` to ``target_crs`` (one or a
        sequence of feature ids; the other values are one for all, or one per feature).
        Returns the number of events recorded."""
        return self.record(
            feature_id,
            outcome="transformed",
            source_crs=source_crs,
            target_crs=target_crs,
            event_type=event_type,
            stage=stage,
            accuracy_m=accuracy_m,
            strategy_index=strategy_index,
            operation_code=operation_code,
            operation_name=operation_name,
            grids=grids,
            degraded=degraded,
        )

    def mapped(
        self,
        feature_id: Values,
        *,
        crs: str,
        event_type: str = "schema_mapping",
        stage: Optional[str] = None,
    ) -> int:
        """Record features whose attributes were mapped, their CRS unchanged: ``crs`` is
        the CRS the features are in, before and after (``source_crs`` = ``target_crs``),
        and no operation, accuracy or grid applies (null)."""
        return self.record(
            feature_id,
            outcome="mapped",
            source_crs=crs,
            target_crs=crs,
            event_type=event_type,
            stage=stage,
        )

    def rejected(
        self,
        feature_id: Values,
        reason: Values,
        *,
        source_crs: Optional[str],
        target_crs: str,
        event_type: str = "crs_transform",
        stage: Optional[str] = None,
        accuracy_m: Values = None,
        operation_code: Values = None,
        operation_name: Values = None,
        grids: Values = None,
        degraded: Values = None,
    ) -> int:
        """Record features rejected, with the reason (required, one for all or one per
        feature); the operation fields name what PROJ would have used, where known."""
        return self.record(
            feature_id,
            outcome="rejected",
            rejection_reason=reason,
            source_crs=source_crs,
            target_crs=target_crs,
            event_type=event_type,
            stage=stage,
            accuracy_m=accuracy_m,
            operation_code=operation_code,
            operation_name=operation_name,
            grids=grids,
            degraded=degraded,
        )

    def record(self, feature_id: Values, *, outcome: Values, stage: Optional[str] = None, **fields: Any) -> int:
        """Record events with any outcome, one value for all or one per feature (the three
        methods above call this): every contract field but those the run fills (ids,
        sequence, time, run id, tool version, audit tag, input dataset and version)."""
        ids = [feature_id] if isinstance(feature_id, str) else _values(feature_id)
        n = len(ids)
        if n == 0:
            return 0
        _check_ids(ids)
        unknown = set(fields) - set(COLUMNS)
        if unknown:
            raise TypeError(f"unknown event field(s): {', '.join(sorted(unknown))}")
        reserved = set(_FILLED) & set(fields)
        if reserved:
            raise TypeError(f"{', '.join(sorted(reserved))}: filled by the run, not per event")
        chunk: Dict[str, Any] = {name: _spread(name, fields.get(name), n) for name in COLUMNS if name not in _FILLED}
        chunk["outcome"] = _spread("outcome", outcome, n)
        chunk["stage"] = _spread("stage", stage or self.stage, n)
        chunk["feature_id"] = ids
        _check_rows(ids, chunk["outcome"], chunk["rejection_reason"])
        for name, value in (("run_id", self.run_id), ("event_time_utc", self._now()),
                            ("tool_version", self.tool_version), ("audit_tag", self.audit_tag),
                            ("input_dataset", self.input_dataset), ("input_version", self.input_version)):
            chunk[name] = _Same(value)
        self._chunks.append((self.next_sequence, n, chunk))
        self.next_sequence += n
        self.recorded += n
        self.pending += n
        if self.writer is not None and self.pending >= self.chunk_rows:
            self.flush()
        return n

    # -- output ------------------------------------------------------------------------

    def table(self) -> "pyarrow.Table":
        """The pending events as a pyarrow table in the contract's schema (kept pending)."""
        import pyarrow as pa

        schema = event_schema()
        batches = [self._batch(schema, first, n, chunk) for first, n, chunk in self._chunks]
        return pa.Table.from_batches(batches, schema=schema)

    def _batch(self, schema: "pyarrow.Schema", first: int, n: int, chunk: Dict[str, Any]) -> "pyarrow.RecordBatch":
        import pyarrow as pa
        import pyarrow.compute as pc

        seq = pa.array(range(first, first + n), type=pa.int64())
        digits = pc.utf8_lpad(pc.cast(seq, pa.string()), width=9, padding="0")
        columns = {
            "sequence": seq,
            "event_id": pc.binary_join_element_wise(pa.scalar(self.run_id + "-"), digits, ""),
        }
        arrays = []
        for field in schema:
            value = columns.get(field.name, chunk.get(field.name))
            if isinstance(value, _Same):
                value = pa.repeat(pa.scalar(value.value, type=field.type), n)
            elif not isinstance(value, (pa.Array, pa.ChunkedArray)):
                value = pa.array(value, type=field.type, from_pandas=False)
            elif value.type != field.type:
                value = value.cast(field.type)
            arrays.append(value)
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def drain(self) -> "pyarrow.Table":
        """The pending events as a table, no longer pending."""
        t = self.table()
        self._clear()
        return t

    def flush(self) -> List["Commit"]:
        """Hand the pending events to the writer (``write``; it commits partitions as they
        fill) and return its commits so far; without a writer, ``ValueError``."""
        if self.writer is None:
            raise ValueError("this run has no writer: take its events with table() or drain()")
        if self.pending:
            self.writer.write(self.table())
            self._clear()
        return self.writer.commits

    def close(self) -> List["Commit"]:
        """Flush what is pending (the writer stays open: close it, or leave its ``with``)."""
        return self.flush() if self.writer is not None else []

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()

    # -- internals ---------------------------------------------------------------------

    def _now(self) -> dt.datetime:
        when = self.clock()
        if not isinstance(when, dt.datetime) or when.tzinfo is None or when.utcoffset() is None:
            raise ValueError(f"the run's clock returned {when!r}: a zone-aware datetime is required")
        return when.astimezone(dt.timezone.utc)

    def _clear(self) -> None:
        self._chunks = []
        self.pending = 0


class _Same:
    """One value for every event of a call."""

    def __init__(self, value: Any) -> None:
        self.value = value.item() if hasattr(value, "item") and not isinstance(value, (str, bytes)) else value


def _is_arrow(value: Any) -> bool:
    return type(value).__module__.startswith("pyarrow") and hasattr(value, "null_count")


def _values(value: Any) -> Any:
    """A list of the values, or a pyarrow array as it is (what the geo helper passes)."""
    if _is_arrow(value):
        return value
    tolist = getattr(value, "tolist", None)
    return list(tolist()) if callable(tolist) else list(value)


def _check_ids(ids: Any) -> None:
    if _is_arrow(ids):
        import pyarrow.compute as pc

        bad = pc.or_kleene(pc.is_null(ids), pc.equal(pc.utf8_length(ids), 0))
        if not pc.any(bad).as_py():
            return
        ids = ids.to_pylist()
    for i, f in enumerate(ids):
        if not isinstance(f, str) or not f:
            raise ValueError(f"feature_id {i + 1} of {len(ids)} is {f!r}: a non-empty string is required")


def _spread(name: str, value: Any, n: int) -> Any:
    """A scalar (one value for every event) or a list of exactly ``n`` values."""
    if value is None or isinstance(value, (str, bytes, int, float, bool, np_generic())):
        return _Same(value)
    values = _values(value)
    if len(values) != n:
        raise ValueError(f"{name}: {len(values)} values for {n} features")
    return values


def _check_rows(ids: Any, outcome: Any, reason: Any) -> None:
    """Every event has an outcome; a rejection has a reason."""
    if _is_arrow(outcome) and _is_arrow(reason):
        import pyarrow.compute as pc

        missing = pc.or_kleene(pc.is_null(reason), pc.equal(pc.utf8_length(reason), 0))
        bad = pc.or_kleene(pc.is_null(outcome), pc.and_kleene(pc.equal(outcome, "rejected"), missing))
        if not pc.any(bad).as_py():
            return
        outcome, reason = outcome.to_pylist(), reason.to_pylist()
    if _is_arrow(ids):
        ids = ids.to_pylist()
    outcomes = [outcome.value] * len(ids) if isinstance(outcome, _Same) else outcome
    reasons = [reason.value] * len(ids) if isinstance(reason, _Same) else reason
    for f, o, r in zip(ids, outcomes, reasons):
        if not o:
            raise ValueError(f"feature {f!r}: an outcome is required")
        if o == "rejected" and not r:
            raise ValueError(f"feature {f!r}: a rejection needs a reason")


def np_generic() -> type:
    """numpy's scalar base type (a scalar, not a sequence), or a type nothing is."""
    try:
        import numpy

        return numpy.generic
    except ImportError:  # pragma: no cover - numpy is optional for a Run
        return type(None)
