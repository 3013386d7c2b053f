"""An AWS Lambda writer: appends lineage events to the store named by ``LINEAGE_STORE``.

Triggers (docs/deploy.md, "An AWS Lambda writer"; terraform/modules/lambda-writer):

- **S3 ``ObjectCreated``** (asynchronous invocation): each object (NDJSON, CSV or Parquet,
  by extension, or ``LINEAGE_FORMAT``) is appended with the commit key
  ``s3://<bucket>/<key>?versionId=<id>`` (``?etag=<etag>`` in an unversioned bucket). The
  object is fetched by that version (or ``If-Match`` that ETag), so the key names exactly
  the bytes appended: Lambda's two retries of a failed invocation, and S3's occasional
  duplicate notification, re-derive the same commits and publish nothing new.
- **SQS** (event source mapping with ``ReportBatchItemFailures``): each message body is
  NDJSON (one or more events), appended with the commit key ``sqs:<queue arn>:<message
  id>``, so a redelivered message publishes nothing new. Messages that fail are returned
  in ``batchItemFailures``; SQS deletes the others.

Refused input (a line that breaks the contract) is logged as one JSON line with the
object or message, the line, the field and why, and publishes nothing. Retrying cannot
change its bytes, so it is never handed back for a retry: an S3 object is not raised (the
invocation succeeds and says ``refused``; the object stays in its bucket), and a refused
SQS message is not reported in ``batchItemFailures``. The handler sends it itself to
``LINEAGE_REFUSED_QUEUE_URL`` (the terraform module sets the event queue's dead-letter
queue), with the refusal in its message attributes, where it can be read and replayed once
fixed; without that variable it is logged and dropped. So a refusal does not depend on
the queue's redrive policy; only a failure to set the message aside reports it for
redelivery. Failures of the store or of S3 are raised (S3) or reported (SQS), so the
platform retries them; the commit keys make every retry safe.

Environment: ``LINEAGE_STORE`` (``s3://bucket/prefix``; required), ``LINEAGE_BATCH_ROWS``
(rows per part, default 100000), ``LINEAGE_FORMAT`` (force ``ndjson``, ``csv`` or
``parquet`` for S3 objects), ``LINEAGE_MIN_REMAINING_MS`` (SQS: stop starting messages when
less time than this is left, default 10000; the rest are reported for redelivery),
``LINEAGE_REFUSED_QUEUE_URL`` (SQS: where refused messages go; unset: logged and dropped),
``TMPDIR`` (where objects are spooled; Lambda's ``/tmp``, sized by its ephemeral storage).
Credentials and region come from the function's role, as for every AWS SDK.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
import urllib.parse
from typing import Any, Optional

import lineage_store

log = logging.getLogger("lineage_writer")
log.setLevel(os.environ.get("LINEAGE_HANDLER_LOG", "INFO"))

_store: Optional[lineage_store.Store] = None
_store_url: Optional[str] = None
_s3 = None
_sqs = None
_request_id: Optional[str] = None  # the invocation's, set by `handler`

FORMATS = {".ndjson": "ndjson", ".jsonl": "ndjson", ".json": "ndjson", ".csv": "csv",
           ".parquet": "parquet", ".pq": "parquet"}


class RefusedEvent(ValueError):
    """An event this handler cannot take (not an S3 or SQS event): a configuration error."""


def _emit(level: int, what: str, **fields: Any) -> None:
    """One JSON line per outcome, for CloudWatch Logs Insights (``fields what, object, line``)."""
    log.log(level, json.dumps({"what": what, **fields}, default=str, sort_keys=True))


def store() -> lineage_store.Store:
    """The store, opened once per execution environment (warm invocations reuse it)."""
    global _store, _store_url
    url = os.environ.get("LINEAGE_STORE", "").strip()
    if not url:
        raise RefusedEvent("LINEAGE_STORE is not set: the function needs the archive's store URL (s3://bucket/prefix)")
    if _store is None or _store_url != url:
        _store, _store_url = lineage_store.open(url), url
    return _store


def s3_client():
    global _s3
    if _s3 is None:
        import boto3  # in every Lambda Python runtime

        _s3 = boto3.client("s3")
    return _s3


def sqs_client():
    global _sqs
    if _sqs is None:
        import boto3

        _sqs = boto3.client("sqs")
    return _sqs


def batch_rows() -> int:
    return int(os.environ.get("LINEAGE_BATCH_ROWS", lineage_store.DEFAULT_BATCH_ROWS))


def _refusal(e: lineage_store.LineageError) -> dict[str, Any]:
    """Where a refused input went wrong: line (or row) and field, as the CLI names them."""
    return {"line": getattr(e, "row", None), "field": getattr(e, "field", None),
            "reason": getattr(e, "reason", None), "error": str(e), "kind": type(e).__name__}


def _summary(commits: list) -> dict[str, Any]:
    # A retry (Lambda's, or a duplicate notification) finds its commits already there: under
    # resume=True as kept flushes (`kept`: an earlier attempt made them; not published again),
    # else as commits that existed. Either is "already committed".
    existed = sum(1 for c in commits if c.existed or c.kept)
    return {"commits": len(commits), "rows": sum(c.row_count for c in commits),
            "commit_ids": [c.commit_id for c in commits],
            "already_committed": existed,
            "kept": [c.commit_id for c in commits if c.kept],
            "note": ("every commit was already there (a retry): nothing published"
                     if commits and existed == len(commits) else None)}


# --- S3 ---------------------------------------------------------------------------------

def s3_commit_key(bucket: str, key: str, version_id: Optional[str], etag: Optional[str]) -> str:
    """What makes a retried S3 invocation the same request: the object's version (or, in an
    unversioned bucket, its ETag). A new upload to the same key is a new version (ETag):
    appended, as it should be, under a new key."""
    base = f"s3://{bucket}/{key}"
    if version_id and version_id != "null":
        return f"{base}?versionId={version_id}"
    if etag:
        bare = etag.strip('"')
        return f"{base}?etag={bare}"
    raise RefusedEvent(f"{base}: the event names neither a version id nor an ETag")


def object_format(key: str) -> Optional[str]:
    forced = os.environ.get("LINEAGE_FORMAT")
    if forced:
        return forced
    return FORMATS.get(os.path.splitext(key)[1].lower())


def append_s3_object(record: dict[str, Any]) -> dict[str, Any]:
    s3 = record["s3"]
    bucket = s3["bucket"]["name"]
    key = urllib.parse.unquote_plus(s3["object"]["key"])  # S3 events URL-encode keys
    version_id, etag = s3["object"].get("versionId"), s3["object"].get("eTag")
    commit_key = s3_commit_key(bucket, key, version_id, etag)
    name = f"s3://{bucket}/{key}"
    fmt = object_format(key)
    if fmt is None:
        out = {"object": name, "commit_key": commit_key,
               "error": "cannot tell the format from the key's extension (.ndjson, .jsonl, .json, "
                        ".csv, .parquet); set LINEAGE_FORMAT", "kind": "InputError"}
        _emit(logging.ERROR, "refused", **out)
        return {"refused": out}
    args = {"Bucket": bucket, "Key": key}
    if version_id and version_id != "null":
        args["VersionId"] = version_id
    elif etag:
        args["IfMatch"] = etag
    from botocore.exceptions import ClientError

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lineage-") as tmp:
        path = os.path.join(tmp, "object" + {"ndjson": ".ndjson", "csv": ".csv"}.get(fmt, ".parquet"))
        try:
            resp = s3_client().get_object(**args)
            with open(path, "wb") as f:
                shutil.copyfileobj(resp["Body"], f, 1 << 20)
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "NoSuchVersion", "PreconditionFailed", "412"):
                # That version is gone or the key holds newer bytes (which have an event of
                # their own): nothing to append for this one, and nothing to retry.
                out = {"object": name, "commit_key": commit_key, "error": str(e)}
                _emit(logging.WARNING, "skipped", **out)
                return {"skipped": out}
            raise
        try:
            commits = store().append_file(path, format=fmt, commit_key=commit_key,
                                          batch_rows=batch_rows(), resume=True,
                                          request_id=_request_id)
        except (lineage_store.InputError, lineage_store.ConflictError) as e:
            out = {"object": name, "commit_key": commit_key, **_refusal(e)}
            _emit(logging.ERROR, "refused", **out)
            return {"refused": out}
    out = {"object": name, "commit_key": commit_key, **_summary(commits),
           "seconds": round(time.monotonic() - started, 3)}
    _emit(logging.INFO, "appended", **out)
    return {"appended": out}


# --- SQS --------------------------------------------------------------------------------

def sqs_commit_key(record: dict[str, Any]) -> str:
    """What makes a redelivered message the same request: its queue and message id."""
    return f"sqs:{record.get('eventSourceARN', '')}:{record['messageId']}"


def _attribute(value: Any, limit: int = 1024) -> dict[str, str]:
    if isinstance(value, int):
        return {"DataType": "Number", "StringValue": str(value)}
    return {"DataType": "String", "StringValue": str(value)[:limit]}


def set_aside(record: dict[str, Any], refusal: dict[str, Any]) -> dict[str, Any]:
    """Take a refused message out of the retry loop: send it to ``LINEAGE_REFUSED_QUEUE_URL``
    with the refusal as message attributes (the original body unchanged, ready to be
    fixed and replayed), or, without that queue, only log it. Raises if the queue refuses
    the message (it then comes back and is set aside again)."""
    queue = os.environ.get("LINEAGE_REFUSED_QUEUE_URL", "").strip()
    body = record.get("body", "")
    digest = {"body_bytes": len(body.encode("utf-8")),
              "body_sha256": hashlib.sha256(body.encode("utf-8")).hexdigest()}
    if not queue:
        return {"set_aside": "dropped", **digest}
    fields = {"lineage.source.message_id": record["messageId"],
              "lineage.source.queue_arn": record.get("eventSourceARN", ""),
              "lineage.refused.line": refusal.get("line"), "lineage.refused.field": refusal.get("field"),
              "lineage.refused.reason": refusal.get("reason"), "lineage.refused.error": refusal.get("error")}
    attributes = {k: _attribute(v) for k, v in fields.items() if v not in (None, "")}
    sent = sqs_client().send_message(QueueUrl=queue, MessageBody=body, MessageAttributes=attributes)
    return {"set_aside": queue, "dead_letter_message_id": sent.get("MessageId"), **digest}


def append_sqs_message(record: dict[str, Any]) -> str:
    """Append one message: ``appended``, ``refused`` (set aside, not to be retried) or
    ``failed`` (must come back: reported in ``batchItemFailures``)."""
    message_id = record["messageId"]
    commit_key = sqs_commit_key(record)
    receives = record.get("attributes", {}).get("ApproximateReceiveCount")
    with tempfile.TemporaryDirectory(prefix="lineage-") as tmp:
        path = os.path.join(tmp, "message.ndjson")
        with open(path, "w", encoding="utf-8") as f:
            f.write(record.get("body", ""))
        try:
            commits = store().append_file(path, format="ndjson", commit_key=commit_key,
                                          batch_rows=batch_rows(), resume=True,
                                          request_id=_request_id)
        except (lineage_store.InputError, lineage_store.ConflictError) as e:
            refusal = _refusal(e)
            try:
                aside = set_aside(record, refusal)
            except Exception as sent:  # the refused queue is a store failure like any other
                _emit(logging.ERROR, "failed", message_id=message_id, commit_key=commit_key,
                      receive_count=receives, error=f"refused, and could not be set aside: {sent}",
                      kind=type(sent).__name__, refusal=refusal)
                return "failed"
            _emit(logging.ERROR, "refused", message_id=message_id, commit_key=commit_key,
                  receive_count=receives, **refusal, **aside)
            return "refused"
        except lineage_store.LineageError as e:
            _emit(logging.ERROR, "failed", message_id=message_id, commit_key=commit_key,
                  receive_count=receives, error=str(e), kind=type(e).__name__)
            return "failed"
    _emit(logging.INFO, "appended", message_id=message_id, commit_key=commit_key, **_summary(commits))
    return "appended"


def handle_sqs(records: list[dict[str, Any]], context: Any) -> dict[str, Any]:
    min_ms = int(os.environ.get("LINEAGE_MIN_REMAINING_MS", "10000"))
    failures = []
    for i, record in enumerate(records):
        remaining = context.get_remaining_time_in_millis() if context is not None else None
        if remaining is not None and remaining < min_ms:
            # Not started, so not half done: these come back in a later invocation.
            rest = [r["messageId"] for r in records[i:]]
            _emit(logging.WARNING, "deferred", message_ids=rest, remaining_ms=remaining)
            failures.extend(rest)
            break
        if append_sqs_message(record) == "failed":
            failures.append(record["messageId"])
    return {"batchItemFailures": [{"itemIdentifier": m} for m in failures]}


# --- entry point ------------------------------------------------------------------------

def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The Lambda entry point (``handler.handler``)."""
    global _request_id
    # Recorded in every pointer's `writer` record, beside AWS_LAMBDA_FUNCTION_NAME.
    _request_id = getattr(context, "aws_request_id", None)
    records = event.get("Records") if isinstance(event, dict) else None
    if not records:
        raise RefusedEvent(f"not an S3 or SQS event (no Records): {json.dumps(event)[:200]}")
    sources = {r.get("eventSource") for r in records}
    store()  # LINEAGE_STORE is checked before anything is read
    if sources == {"aws:sqs"}:
        return handle_sqs(records, context)
    if sources == {"aws:s3"}:
        results: dict[str, list] = {"appended": [], "refused": [], "skipped": []}
        for record in records:
            if not record.get("eventName", "").startswith("ObjectCreated:"):
                _emit(logging.INFO, "ignored", event_name=record.get("eventName"))
                continue
            for k, v in append_s3_object(record).items():
                results[k].append(v)
        return results
    raise RefusedEvent(f"unsupported event sources {sorted(map(str, sources))}: expected aws:s3 or aws:sqs")
