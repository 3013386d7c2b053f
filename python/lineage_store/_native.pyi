"""Type stubs of the PyO3 extension ``lineage_store._native`` (re-exported by the package)."""

import os
from datetime import timedelta
from typing import Any, Literal, Optional, Protocol, Sequence, Union, final, overload

import pyarrow

class ArrowStreamExportable(Protocol):
    """Anything exporting an Arrow C stream (pyarrow Table/RecordBatchReader, Polars
    DataFrame, DuckDB relation, ...)."""

    def __arrow_c_stream__(self, requested_schema: object = None) -> object: ...

class ArrowArrayExportable(Protocol):
    """Anything exporting one Arrow C array of struct type (a record batch)."""

    def __arrow_c_array__(self, requested_schema: object = None) -> tuple[object, object]: ...

ArrowData = Union[ArrowStreamExportable, ArrowArrayExportable]
StrPath = Union[str, "os.PathLike[str]"]

SCHEMA_VERSION: str
SCHEMA_VERSIONS: list[str]
DEFAULT_BATCH_ROWS: int
DEFAULT_MAX_IN_FLIGHT: int

def open(
    url: StrPath,
    *,
    endpoint_url: Optional[str] = None,
    max_seal_bytes: Optional[int] = None,
    max_page_bytes: Optional[int] = None,
    max_decoded_bytes: Optional[int] = None,
) -> Store:
    """Open the store a URL names: a directory, ``file:///abs``, ``memory://``,
    ``s3://bucket/prefix``, ``az://container/prefix`` or ``gs://bucket/prefix``.
    Credentials come from the environment, as for the CLI. ``max_seal_bytes``,
    ``max_page_bytes`` and ``max_decoded_bytes`` are this store's read limits (``None``:
    the defaults, see ``set_read_limits``)."""

def canonical_crs(value: str) -> str:
    """The canonical ``EPSG:<code>`` of a CRS identifier; ``InputError`` otherwise."""

def set_read_limits(
    *,
    max_seal_bytes: Optional[int] = None,
    max_page_bytes: Optional[int] = None,
    max_decoded_bytes: Optional[int] = None,
) -> tuple[int, int]:
    """Set the read limits of the stores opened from now on without their own
    (``open(..., max_seal_bytes=, max_page_bytes=)``); a store already open keeps its
    limits. Returns the defaults now in force."""

def check(
    data: Union[ArrowData, StrPath],
    *,
    format: Optional[str] = None,
    schema_version: Optional[str] = None,
    max_errors: int = 0,
) -> list[dict[str, Any]]:
    """Validate ``data`` (Arrow data, or the path of an NDJSON, CSV, Arrow IPC or Parquet
    file) as an append would, without a store: every error in input order (the first
    ``max_errors``; 0: all), each a dict with ``line``, ``row``, ``field``, ``value`` and
    ``reason``. An empty list: an append would accept it."""

def contract_schema(version: Optional[str] = None) -> pyarrow.Schema:
    """A registered contract version as a ``pyarrow.Schema`` (default 1.2.0, which
    ``lineage_store.SCHEMA`` is; ``"1.3.0"`` adds the operation, grids, degraded and input
    dataset columns)."""

def conform(data: ArrowData, *, fill_missing: bool = False, drop_extra: bool = False) -> Conformed:
    """Convert ``data`` to the contract's types where no value can change (integers checked
    for range, nanoseconds without a sub-microsecond part, any time zone to UTC, ``Null``
    columns, exact decimals and floats); ``InputError`` names the row and field of a lossy
    value, or every field that cannot be converted at all. ``fill_missing`` adds each
    nullable column the input lacks (all null), ``drop_extra`` drops each column of no
    contract version (a GeoDataFrame's geometry too)."""

def _arrow_import_check(data: ArrowData) -> int:
    """Benchmark diagnostics: take ``data`` as ``append`` does first; its rows."""

def keygen(prefix: StrPath) -> str:
    """Write ``<prefix>.key`` (secret, 0600) and ``<prefix>.pub``; return the key id."""

def verify_proof(
    proof: Union[Proof, str, "os.PathLike[str]"],
    head: Optional[str] = None,
    *,
    public_key: Optional[StrPath] = None,
    part: Optional[StrPath] = None,
) -> ProofSummary:
    """Check an inclusion proof offline against a head digest; ``VerifyError`` when it
    does not hold. ``proof`` is a ``Proof``, its text, or the path of a proof file. A
    compact proof (``Proof.to_json(embed_seal=False)`` of a signed seal: a commit's
    ``c2sp.org/tlog-proof@v1``, a row's ``lineage-row-proof/2``), or a ``Proof`` of a
    signed seal given no ``head``, is checked against ``public_key`` alone."""

def merge_reports(
    reports: Optional[Sequence[Union[VerifyReport, str, dict[str, Any]]]] = None,
    *,
    report_dir: Optional[str] = None,
    endpoint_url: Optional[str] = None,
) -> VerifyReport:
    """Combine the reports of every shard of one verification (``Store.verify(shard=…)``)
    into one, as ``lineage verify merge`` does: the reports given (``VerifyReport``, its
    ``to_json()`` or ``to_dict()``) and the newest attempt of each shard in ``report_dir``."""

def read_part(part: PartRef, columns: Optional[Sequence[str]] = None) -> pyarrow.Table:
    """The rows of one planned part, after checking its size, sealed digests and rows;
    ``IntegrityError`` naming the part otherwise. The store is opened with this
    process's credentials."""

def render_report(data: Union[str, dict[str, Any]], format: str = "html") -> str:
    """Render the data of an audit report (what ``Store.report`` returns, or the JSON
    ``lineage report --format json`` writes) as "html", "md" or "json", without the store."""

@final
class Store:
    """A lineage store. Safe to share between threads; calls release the GIL."""

    @property
    def url(self) -> str: ...
    @property
    def endpoint_url(self) -> Optional[str]: ...
    def append(
        self,
        data: ArrowData,
        *,
        batch_rows: int = 100000,
        commit_key: Optional[str] = None,
        max_errors: int = 20,
        resume: bool = False,
        signing_key: Optional[StrPath] = None,
        request_id: Optional[str] = None,
    ) -> list[Commit]:
        """Validate all of ``data``, then commit it (one part per flush of at most
        ``batch_rows`` rows per (run_id, target_crs)). ``InputError`` publishes nothing and
        lists the first ``max_errors`` errors (0: all) in ``.errors``. A
        stream (``RecordBatchReader``, DuckDB relation) is spooled to a temp file first, so
        memory stays bounded."""
    def append_file(
        self,
        path: StrPath,
        *,
        format: Optional[str] = None,
        batch_rows: int = 100000,
        commit_key: Optional[str] = None,
        max_errors: int = 20,
        resume: bool = False,
        signing_key: Optional[StrPath] = None,
        request_id: Optional[str] = None,
    ) -> list[Commit]:
        """Append a file's events (NDJSON, CSV, Arrow IPC or Parquet; ``format`` from the
        extension unless given) as ``lineage append --input`` does: validated whole, then
        committed with bounded memory. ``InputError`` names the line or row and field and
        publishes nothing. Needs no pyarrow."""
    def writer(
        self,
        *,
        batch_rows: int = 100000,
        max_delay: Union[float, timedelta, None] = None,
        max_in_flight: int = 8,
        commit_key: Optional[str] = None,
        resume: bool = False,
        signing_key: Optional[StrPath] = None,
        request_id: Optional[str] = None,
    ) -> Writer:
        """A streaming writer for jobs that emit events as they go (a context manager)."""
    def log(self, run_id: Optional[str] = None) -> pyarrow.Table:
        """The commits (of one run), oldest first, as a table of their pointers."""
    def commits(self, run_id: Optional[str] = None) -> list[Commit]:
        """The commits (of one run), oldest first."""
    def verify(
        self,
        *,
        public_key: Union[StrPath, Sequence[StrPath], None] = None,
        expect_head: Optional[str] = None,
        sample: Optional[int] = None,
        sample_seed: Optional[int] = None,
        since_seal: Union[bool, int, None] = None,
        grace: Union[str, float, timedelta, None] = None,
        check: bool = False,
        digest: str = "fastest",
        signed_from: Optional[int] = None,
        witness: Optional[str] = None,
        witness_endpoint_url: Optional[str] = None,
        shard: Optional[tuple[int, int]] = None,
        plan_seal: Optional[int] = None,
        report_dir: Optional[str] = None,
        accept_adopted: bool = False,
        witness_keys: Optional[Sequence[str]] = None,
        witness_quorum: Optional[int] = None,
        tsa_root: Optional[StrPath] = None,
        trust_expected_head: bool = False,
    ) -> VerifyReport:
        """Verify the store as ``lineage verify`` does; ``check=True`` raises
        ``VerifyError`` when the report is not clean. ``digest="all"`` recomputes every
        digest a pointer records (sha256 always), as ``lineage verify --digest all``.
        ``public_key``: one key file or several (every signed seal must verify under one);
        ``signed_from``: every seal from that number on must be signed.
        ``shard=(i, n)``: check one n-th of the store (``--shard I/N``; merge the n
        reports with ``merge_reports``); ``plan_seal``: cut the shards from that seal's
        commits (``--plan-seal``); ``report_dir``: a URL where the shard's report is also
        published (``--report-dir``). ``accept_adopted=True``: the commits ``lineage
        repair`` adopted that ``expect_head`` does not cover (all of them without it) are
        accepted rather than ``adopted_commit`` problems (``--accept-adopted``).
        ``witness_keys``: outside C2SP witnesses' verifier keys; the newest checkpoint must
        carry a valid cosignature by ``witness_quorum`` of them (default: all), as
        ``lineage verify --witness-key … --witness-quorum K``.
        ``tsa_root``: a CA file every seal's RFC 3161 token must chain to (``--tsa-root``;
        a full verify). ``trust_expected_head=True``: what ``expect_head`` covers is
        shown by a consistency proof instead of read again (``--trust-expected-head``)."""
    def delta_version(self) -> Optional[int]:
        """The newest Delta Lake version (version N is seal N), or None without a Delta log."""
    def seal(
        self,
        signing_key: Optional[StrPath] = None,
        *,
        allow_empty: bool = False,
        allow_unsigned: bool = False,
        delta_checkpoint_interval: int = 0,
        tsa: Optional[str] = None,
        tsa_timeout: float = 30.0,
    ) -> Seal:
        """Seal every commit not sealed yet; keep the returned head outside the store.
        ``allow_empty``: a seal even with nothing new (``--allow-empty``);
        ``allow_unsigned``: seal without a key after signed seals (``--unsigned``);
        ``delta_checkpoint_interval``: a Delta checkpoint every N versions
        (``--delta-checkpoint-interval``; 0, the default: none);
        ``tsa``: back the seal's time with an RFC 3161 token from this TSA (``--tsa``;
        a failure is ``Seal.time_not_backed``, not an exception)."""
    def prove(
        self,
        commit_id: Optional[str] = None,
        head: Optional[str] = None,
        *,
        seal: Optional[int] = None,
        event_id: Optional[str] = None,
    ) -> Proof:
        """An inclusion proof of a commit in a seal; with ``event_id`` instead, a row
        proof of that event (its values, its commit, the part that holds it).
        ``Proof.to_json(embed_seal=False)`` is the text ``lineage prove`` writes,
        ``embed_seal=True`` the text ``prove --embed-seal`` writes."""
    def report(
        self,
        path: StrPath,
        format: str = "html",
        *,
        expect_head: Optional[str] = None,
        public_key: Union[StrPath, list[StrPath], None] = None,
        signed_from: Optional[int] = None,
        witness: Optional[str] = None,
        witness_endpoint_url: Optional[str] = None,
        witness_keys: Optional[Sequence[str]] = None,
        witness_quorum: Optional[int] = None,
        run_id: Union[str, list[str], None] = None,
        as_of_seal: Optional[int] = None,
        force: bool = False,
        as_of_time: Optional[str] = None,
        accept_adopted: bool = False,
    ) -> dict[str, Any]:
        """Write the audit report (``lineage report``) to ``path`` as "html", "md" or
        "json", whether or not problems were found; returns its data (the JSON format)."""
    @overload
    def files(
        self,
        as_of_seal: Optional[int] = None,
        run_id: Optional[str] = None,
        *,
        include_unsealed: bool = False,
        originals: bool = False,
        as_of_time: Optional[str] = None,
        expect_head: Optional[str] = None,
        public_key: Union[StrPath, Sequence[StrPath], None] = None,
        signed_from: Optional[int] = None,
        witness: Optional[str] = None,
        witness_endpoint_url: Optional[str] = None,
        witness_keys: Optional[Sequence[str]] = None,
        witness_quorum: Optional[int] = None,
        detail: Literal[False] = False,
        since_seal: Optional[int] = None,
    ) -> list[str]:
        """The parts of exactly the commits sealed by seals 1..as_of_seal (default: the
        newest), each checked against its sealed pointer first: paths or URLs for
        duckdb.read_parquet, Polars, pyarrow. Raises ConflictError naming a part or
        pointer that is not as sealed. Compacted parts for the commits a compaction in
        effect covers, unless ``originals=True``. The anchors (``expect_head``,
        ``public_key``, ``signed_from``, ``witness``) are checked first, as by ``verify``:
        one that does not hold raises ConflictError naming it. ``since_seal=K``: only
        the commits sealed after seal K, reading only seals K..N (the original parts; the
        anchors checked against those seals: ``expect_head`` must be the head of one of
        them; ``witness``: its records of those seals must hold, those of earlier seals
        are counted, not checked; no ``as_of_time``)."""
    @overload
    def files(
        self,
        as_of_seal: Optional[int] = None,
        run_id: Optional[str] = None,
        *,
        include_unsealed: bool = False,
        originals: bool = False,
        as_of_time: Optional[str] = None,
        expect_head: Optional[str] = None,
        public_key: Union[StrPath, Sequence[StrPath], None] = None,
        signed_from: Optional[int] = None,
        witness: Optional[str] = None,
        witness_endpoint_url: Optional[str] = None,
        witness_keys: Optional[Sequence[str]] = None,
        witness_quorum: Optional[int] = None,
        detail: Literal[True],
        since_seal: Optional[int] = None,
    ) -> list[dict[str, Any]]:
        """As above, a dict per part as ``lineage files --json`` prints it: ``location``,
        ``part_path``, ``commit_id`` (None for a compacted part, which names its
        compaction and original commits under ``compaction``), ``run_id``,
        ``target_crs``, ``rows``, ``size_bytes``, ``sha256``, ``blake3``,
        ``committed_utc``, ``pointer``, ``sealed_by`` and ``adopted`` (its commit was
        adopted by ``lineage repair``)."""
    def plan(
        self,
        as_of_seal: Optional[int] = None,
        run_id: Optional[str] = None,
        *,
        target_crs: Optional[str] = None,
        feature_id: Optional[str] = None,
        include_unsealed: bool = False,
        originals: bool = False,
        as_of_time: Optional[str] = None,
        expect_head: Optional[str] = None,
        public_key: Union[StrPath, Sequence[StrPath], None] = None,
        signed_from: Optional[int] = None,
        witness: Optional[str] = None,
        witness_endpoint_url: Optional[str] = None,
        witness_keys: Optional[Sequence[str]] = None,
        witness_quorum: Optional[int] = None,
    ) -> list[PartRef]:
        """The parts of a read as picklable ``PartRef``s, for workers to read with
        ``read_part`` (each part checked there against its sealed pointer). The anchors
        (``expect_head``, ``public_key``, ``signed_from``, ``witness``) are checked here,
        on the driver, first, as by ``files`` and ``scan``: one that does not hold raises
        ConflictError naming it, and nothing is planned. Each ref's ``anchors`` says what
        was checked."""
    def scan(
        self,
        as_of_seal: Optional[int] = None,
        run_id: Optional[str] = None,
        columns: Optional[list[str]] = None,
        filter: Optional[dict[str, str]] = None,
        *,
        include_unsealed: bool = False,
        originals: bool = False,
        provenance: bool = False,
        as_of_time: Optional[str] = None,
        expect_head: Optional[str] = None,
        public_key: Union[StrPath, Sequence[StrPath], None] = None,
        signed_from: Optional[int] = None,
        witness: Optional[str] = None,
        witness_endpoint_url: Optional[str] = None,
        witness_keys: Optional[Sequence[str]] = None,
        witness_quorum: Optional[int] = None,
        since_seal: Optional[int] = None,
    ) -> pyarrow.RecordBatchReader:
        """The rows of exactly the commits sealed by seals 1..as_of_seal (default: the
        newest), each part checked against its sealed pointer before its rows are handed
        on. filter: {"target_crs": ..., "feature_id": ...}. Compacted parts where a
        compaction in effect covers the commits, unless ``originals=True``.
        ``provenance=True`` adds commit_id, sealed_by_seal and part_path (originals read).
        ``since_seal=K``: only the rows of the commits sealed after seal K, as for files."""
    def seals(
        self,
        *,
        public_key: Union[StrPath, list[StrPath], None] = None,
        signed_from: Optional[int] = None,
        expect_head: Optional[str] = None,
        witness: Optional[str] = None,
        witness_endpoint_url: Optional[str] = None,
        witness_keys: Optional[Sequence[str]] = None,
        witness_quorum: Optional[int] = None,
    ) -> dict[str, Any]:
        """Every seal (``lineage seals --json``) and what is wrong against the anchors:
        {"seals", "problems", "expect_head_seq", "witness_problems"}."""
    def show(
        self,
        what: Union[str, int],
        *,
        public_key: Union[StrPath, list[StrPath], None] = None,
        signed_from: Optional[int] = None,
        expect_head: Optional[str] = None,
        witness: Optional[str] = None,
        witness_endpoint_url: Optional[str] = None,
        witness_keys: Optional[Sequence[str]] = None,
        witness_quorum: Optional[int] = None,
    ) -> dict[str, Any]:
        """One commit or seal (``lineage show --json``), once every anchor given holds."""
    def diff(
        self,
        a: int,
        b: int,
        *,
        public_key: Union[StrPath, list[StrPath], None] = None,
        signed_from: Optional[int] = None,
        expect_head: Optional[str] = None,
        witness: Optional[str] = None,
        witness_endpoint_url: Optional[str] = None,
        witness_keys: Optional[Sequence[str]] = None,
        witness_quorum: Optional[int] = None,
    ) -> dict[str, Any]:
        """What changed from seal a to seal b (``lineage diff --json``), once every anchor
        given holds."""
    def compact(
        self,
        *,
        run_id: Optional[str] = None,
        target_rows: int = 100000,
        min_parts: int = 2,
        dry_run: bool = False,
        signing_key: Optional[StrPath] = None,
        allow_unsigned: bool = False,
        delta_checkpoint: bool = False,
    ) -> dict[str, Any]:
        """Merge sealed parts into compacted parts and publish the seal that puts them
        into effect, as ``lineage compact``; returns what ``lineage compact --json`` prints.
        ``delta_checkpoint``: a Delta checkpoint for that seal's version (``--delta-checkpoint``)."""

@final
class Writer:
    """Streams batches into a store: ``with store.writer() as w: w.write(batch)``."""

    def __enter__(self) -> Writer: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        """Close on success. When the block raised: the commits cut before the exception
        (partitions that filled, waited ``max_delay`` or were flushed) stay published,
        each complete, and are in ``commits``; the rows still buffered are discarded."""
    def write(self, data: ArrowData) -> None:
        """Validate ``data`` whole and buffer it; commits the partitions it fills."""
    def flush(self) -> list[Commit]:
        """Commit every buffered row and wait for all commits; returns every commit so far."""
    def close(self) -> list[Commit]:
        """Publish the rest and return every commit of this writer (idempotent)."""
    def abort(self) -> list[Commit]:
        """Discard the buffered rows, publishing nothing more; returns the commits landed."""
    @property
    def commits(self) -> list[Commit]:
        """Every commit this writer has published so far (also those the ``max_delay``
        timer cut)."""
    @property
    def buffered_rows(self) -> int:
        """Rows buffered, not committed yet."""
    @property
    def closed(self) -> bool: ...

@final
class Conformed:
    """``conform``'s result: Arrow data in the contract's schema (pass it to ``append``),
    and what was done to each column whose type was not the contract's. Pickles as its
    batches (an Arrow IPC stream) and its changes."""

    @property
    def changes(self) -> list[str]:
        """One line per converted column, e.g. "`strategy_index`: Int64 -> Int32 (every value fits)"."""
    @property
    def num_rows(self) -> int: ...
    def to_pyarrow(self) -> pyarrow.Table:
        """The conformed data as a ``pyarrow.Table`` (needs pyarrow)."""
    def __arrow_c_stream__(self, requested_schema: object = None) -> object: ...
    def __len__(self) -> int: ...

@final
class PartRef:
    """One part of a planned read (``Store.plan``): where it is, its sealed size and
    digests, rows, partition values and sealing seal. Pickles as plain data; no credential."""

    @property
    def store(self) -> str: ...
    @property
    def endpoint_url(self) -> Optional[str]: ...
    @property
    def location(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def sha256(self) -> str: ...
    @property
    def blake3(self) -> Optional[str]: ...
    @property
    def rows(self) -> int: ...
    @property
    def run_id(self) -> str: ...
    @property
    def target_crs(self) -> str: ...
    @property
    def commit_id(self) -> str: ...
    @property
    def sealed_by_seal(self) -> Optional[int]: ...
    @property
    def seal_sha256(self) -> Optional[str]: ...
    @property
    def pointer_key(self) -> str: ...
    @property
    def pointer_sha256(self) -> str: ...
    @property
    def feature_id(self) -> Optional[str]: ...
    @property
    def pointer_json(self) -> str: ...
    @property
    def anchors(self) -> list[str]:
        """What ``Store.plan`` checked the seals against on the driver: a line per anchor
        (``anchor head held: …``), or that none was given. A record, not checked again
        by ``read_part``."""

@final
class Commit:
    """One commit: a part and its pointer."""

    @property
    def commit_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def target_crs(self) -> str: ...
    @property
    def part_path(self) -> str: ...
    @property
    def row_count(self) -> int: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def schema_version(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    @property
    def blake3(self) -> Optional[str]: ...
    @property
    def committed_utc(self) -> str: ...
    @property
    def first_sequence(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def min_event_time_utc(self) -> str: ...
    @property
    def max_event_time_utc(self) -> str: ...
    @property
    def tool_version(self) -> str: ...
    @property
    def commit_key(self) -> Optional[str]: ...
    @property
    def adopted(self) -> bool: ...
    @property
    def writer(self) -> Optional[dict[str, Any]]:
        """Who wrote it, as its platform said (``host``, ``process``, ``writer_key_id``,
        ``request_id``, ``platform``); ``None`` when the pointer has no record."""
    @property
    def tail_offset(self) -> Optional[int]: ...
    @property
    def tail_sha256(self) -> Optional[str]: ...
    @property
    def existed(self) -> bool:
        """True when the append found this commit already in the store, committed by an
        earlier run (a retry under the same commit key), and published nothing."""
    @property
    def kept(self) -> bool:
        """True when a resumed append kept this commit (made by an earlier attempt under
        the same commit key) instead of publishing it."""
    @property
    def payload_differs(self) -> Optional[bool]:
        """For a kept commit: whether this attempt's rows differed from the kept ones
        (the kept rows stand); ``None`` unless kept."""
    def to_json(self) -> str:
        """The pointer as one JSON line (as ``lineage append --json`` prints it)."""
    def to_dict(self) -> dict[str, Any]: ...

@final
class Problem:
    """One problem found by ``verify``."""

    @property
    def kind(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def message(self) -> str: ...

@final
class VerifyReport:
    """The result of ``Store.verify()``."""

    @property
    def clean(self) -> bool: ...
    @property
    def store(self) -> str: ...
    @property
    def commits(self) -> int: ...
    @property
    def parts_ok(self) -> int: ...
    @property
    def parts_hashed(self) -> int: ...
    @property
    def parts_sha256_checked(self) -> int: ...
    @property
    def parts_blake3_checked(self) -> int: ...
    @property
    def compacted_parts_ok(self) -> int: ...
    @property
    def parts_not_hashed(self) -> int: ...
    @property
    def rows(self) -> int: ...
    @property
    def bytes_hashed(self) -> int: ...
    @property
    def seals(self) -> int: ...
    @property
    def signed_seals(self) -> int: ...
    @property
    def head_seq(self) -> Optional[int]: ...
    @property
    def head(self) -> Optional[str]: ...
    @property
    def sealed_commits(self) -> int: ...
    @property
    def unsealed_commits(self) -> int: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def in_flight_objects(self) -> list[dict[str, str]]:
        """Every object in flight, named: dicts with ``key``, ``kind`` (``temp``, ``part``,
        ``committed_during_scan``), ``since`` (the time its content carries) and ``detail``."""
    @property
    def summary(self) -> str:
        """The verdict in words, as ``lineage verify`` prints it: ``clean: no problems``,
        ``clean except N objects in flight``, or ``N problems[; M objects in flight]``."""
    @property
    def anchors(self) -> list[dict[str, Any]]:
        """Each anchor given and what became of it: dicts with ``anchor`` (``head``,
        ``keys``, ``witness``), ``held`` and ``statement``; empty when none was given."""
    @property
    def anchored(self) -> bool: ...
    @property
    def anchoring(self) -> str:
        """What the verdict rests on: each anchor's outcome in words, or that none was
        given (internally consistent only)."""
    @property
    def adopted(self) -> int:
        """Commits ``lineage repair`` adopted, among those read."""
    @property
    def adopted_commits(self) -> list[dict[str, Any]]:
        """Every adopted commit read: dicts with ``key``, ``commit_id``, ``part_path``,
        ``sealed_by``, ``anchored`` (the expected head covers it) and ``accepted``
        (``accept_adopted=True``); any other is an ``adopted_commit`` problem."""
    @property
    def sample_seed(self) -> Optional[int]: ...
    @property
    def problems(self) -> list[Problem]: ...
    def to_json(self) -> str:
        """The report as ``lineage verify --json`` prints it."""
    def to_dict(self) -> dict[str, Any]: ...

@final
class Seal:
    """What ``Store.seal()`` made."""

    @property
    def seq(self) -> int: ...
    @property
    def key(self) -> str: ...
    @property
    def head(self) -> str: ...
    @property
    def added(self) -> int: ...
    @property
    def tree_size(self) -> int: ...
    @property
    def root(self) -> str: ...
    @property
    def key_id(self) -> Optional[str]: ...
    @property
    def time_backed(self) -> list[int]: ...
    @property
    def time_not_backed(self) -> Optional[str]: ...

@final
class Proof:
    """An inclusion proof of one commit in one seal."""

    @property
    def commit_id(self) -> str: ...
    @property
    def pointer_key(self) -> str: ...
    @property
    def leaf_index(self) -> int: ...
    @property
    def tree_size(self) -> int: ...
    @property
    def seal_sha256(self) -> str: ...
    @property
    def event_id(self) -> Optional[str]: ...
    @property
    def row(self) -> Optional[dict[str, Any]]: ...
    def to_json(self, embed_seal: Optional[bool] = None) -> str:
        """The proof as JSON text. ``embed_seal=False``: as ``lineage prove`` writes it,
        the compact form for a signed seal (a commit's ``c2sp.org/tlog-proof@v1``, a row's
        ``lineage-row-proof/2``, checked against ``public_key`` alone); ``True``: as
        ``prove --embed-seal``, the ``lineage-proof/1`` (``lineage-row-proof/1``) with the
        seal, checked against a head digest. Not given: a row proof as ``False``, a
        commit's proof as ``True``."""

@final
class ProofSummary:
    """What a valid proof establishes."""

    @property
    def commit_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def target_crs(self) -> str: ...
    @property
    def part_path(self) -> str: ...
    @property
    def part_sha256(self) -> str: ...
    @property
    def rows(self) -> int: ...
    @property
    def seal_seq(self) -> int: ...
    @property
    def sealed_utc(self) -> str: ...
    @property
    def signed_by(self) -> Optional[str]: ...
    @property
    def part_file_checked(self) -> bool: ...
    @property
    def event_id(self) -> Optional[str]: ...
    @property
    def row_index(self) -> Optional[int]: ...
    @property
    def row_json(self) -> Optional[str]: ...
    @property
    def row(self) -> Optional[dict[str, Any]]: ...
