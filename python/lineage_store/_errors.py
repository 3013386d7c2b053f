"""The exceptions of lineage_store, one per kind of the library's errors.

``str(e)`` is the message the ``lineage`` CLI prints for the same failure (its ``error: ``
lines without the prefix, one per error of refused input, then its ``hint: `` line), in
the caller's language: a usage error names the keyword argument (``batch_rows``) where
the CLI names its flag (``--batch-rows``), and a refused schema adds, after the CLI's
lines, the lines that fix it in the library the data came from.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence


class LineageError(Exception):
    """Base class of every lineage_store error (raised as such for internal errors)."""

    def __reduce__(self) -> Any:
        # Keeps row/field/reason (and a VerifyError's report, which pickles as data)
        # across processes: a worker's error pickled to its pool.
        return (type(self), self.args, dict(self.__dict__))


class InputError(LineageError, ValueError):
    """Refused input, usage or key-file error (the CLI's exit code 2). Nothing was published.

    For a refused row, ``row`` is its 1-based number in the input, ``field`` the column
    and ``reason`` why; for a schema mismatch ``field`` names the first differing field
    and ``fields`` every one of them. ``errors`` lists every error found (the first 20),
    each a dict with ``line``, ``row``, ``field``, ``value`` and ``reason`` (as
    ``lineage_store.check`` returns them); ``row``, ``field`` and ``reason`` are the first
    one's. ``errors`` is never empty: an error that is not a list of errors (a usage
    error, a conversion refused as a whole) is its one entry.
    """

    def __init__(
        self,
        message: str,
        *,
        row: Optional[int] = None,
        field: Optional[str] = None,
        reason: Optional[str] = None,
        errors: Optional[List[Dict[str, Any]]] = None,
        fields: Optional[Sequence[str]] = None,
    ) -> None:
        super().__init__(message)
        self.row = row
        self.field = field
        self.reason = message if reason is None else reason
        # Never empty: an error the library did not list (a usage error, a conversion
        # refused as a whole) is its one entry.
        self.errors: List[Dict[str, Any]] = list(errors) if errors else [
            {"line": None, "row": row, "field": field, "value": None, "reason": self.reason}
        ]
        self.fields: List[str] = list(fields) if fields is not None else ([field] if field else [])


class ConflictError(LineageError):
    """The store holds something that contradicts what was written or expected: a key
    taken by other content, a commit key claimed for another payload (the CLI's exit code
    3), or, as ``IntegrityError``, an object that is not as recorded."""


class IntegrityError(ConflictError):
    """The store is not as recorded: a part, pointer, seal or other object changed,
    missing, planted, too large to be ours or not decodable, named in the message (the
    CLI's exit code 1, as ``verify``'s problems). A ``ConflictError``, as it was before it
    had a class of its own."""


class StoreError(LineageError, OSError):
    """The store or the local file system failed, or an object is missing (exit code 2)."""


class VerifyError(LineageError):
    """Verification found problems (``Store.verify(check=True)``, the CLI's exit code 1)
    or a proof does not hold (``verify_proof``). ``report`` is the ``VerifyReport``, when
    there is one; ``reason`` why a proof fails."""

    def __init__(self, message: str, *, report: Any = None, reason: Optional[str] = None) -> None:
        super().__init__(message)
        self.report = report
        self.reason = reason
