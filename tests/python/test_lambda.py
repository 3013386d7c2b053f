"""examples/lambda/handler.py invoked in-process, as the Lambda Python runtime invokes it,
against LocalStack's S3: the source objects in one bucket, the archive (the store) in
another. Events are shaped as S3 and SQS deliver them (S3 event notification 2.1, SQS
event source mapping records with attributes); `LambdaContext` has the runtime's context
attributes. The SQS queue itself is not needed: the handler only reads the event and
answers with `batchItemFailures`.

What each test proves: the first invocation appends; the same event again (Lambda's
retry, S3's duplicate notification, SQS's redelivery) publishes nothing new (the store's
object listing is unchanged, byte for byte); a refused object publishes nothing and is not
raised (so not retried), logging line and field; an SQS batch with one bad message sets
exactly that message aside in the refused-messages queue and reports nothing in
`batchItemFailures` (so it is not retried, whatever the queue's redrive policy); a store
failure is raised (S3) or reported (SQS), so the platform retries it.

The tests of what happens to a refused SQS message (set aside, dropped, or back when it
cannot be set aside) need no LocalStack: a local-disk store and an in-process stand-in
for the SQS client's `send_message`.
"""
from __future__ import annotations

import csv
import hashlib
import importlib.util
import io
import json
import logging
import os
import secrets
import sys
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from botocore.config import Config

import lineage_store as ls
from pkg_support import localstack_endpoint, s3_bucket

REPO = Path(__file__).resolve().parents[2]
FIELDS = ["event_id", "run_id", "sequence", "event_time_utc", "stage", "event_type", "feature_id",
          "source_crs", "target_crs", "outcome", "strategy_index", "accuracy_m", "rejection_reason",
          "tool_version", "audit_tag"]


def load_handler():
    """A fresh import of the example's module (the runtime imports it once per environment)."""
    spec = importlib.util.spec_from_file_location(f"lambda_handler_{secrets.token_hex(4)}",
                                                  REPO / "examples/lambda/handler.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@dataclass
class LambdaContext:
    """The attributes and method of the context object the Lambda Python runtime passes."""
    remaining_ms: int = 300_000
    function_name: str = "lineage-writer"
    function_version: str = "$LATEST"
    memory_limit_in_mb: str = "1024"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/lineage-writer"
    log_stream_name: str = "2026/11/30/[$LATEST]0123456789abcdef"

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def event_row(i: int, run_id: str, crs: str = "EPSG:25832") -> dict:
    rejected = i % 10 == 7
    return {
        "event_id": f"{run_id}-{i:06d}", "run_id": run_id, "sequence": i,
        "event_time_utc": f"2026-07-13T06:{i // 60 % 60:02d}:{i % 60:02d}.{i:06d}Z",
        "stage": "reproject", "event_type": "crs_transform", "feature_id": f"parcels:{i:08d}",
        "source_crs": "EPSG:31467", "target_crs": crs,
        "outcome": "rejected" if rejected else "transformed",
        "strategy_index": None if rejected else i % 4,
        "accuracy_m": None if rejected else 0.25 * i,
        "rejection_reason": "outside_area_of_use" if rejected else None,
        "tool_version": "geostd/2.4.1", "audit_tag": "inspire-tg:2026Q3",
    }


def ndjson(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def csv_bytes(rows: list[dict]) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if v is None else v for k, v in r.items()})
    return buf.getvalue().encode()


def parquet_bytes(rows: list[dict]) -> bytes:
    table = pa.Table.from_pylist(
        [{**r, "event_time_utc": __import__("datetime").datetime.fromisoformat(r["event_time_utc"].replace("Z", "+00:00"))}
         for r in rows], schema=ls.SCHEMA)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


@dataclass
class Env:
    endpoint: str
    s3: object
    versioned: str    # a versioned source bucket
    plain: str        # an unversioned one
    store_url: str    # the archive: s3://<test bucket>/<unique prefix>
    store_bucket: str
    store_prefix: str
    handler: object

    def put(self, bucket: str, key: str, body: bytes) -> dict:
        return self.s3.put_object(Bucket=bucket, Key=key, Body=body)

    def s3_event(self, bucket: str, key: str, put: dict, size: int,
                 name: str = "ObjectCreated:Put") -> dict:
        """An S3 event notification (version 2.1) as Lambda receives it: the key
        URL-encoded, the ETag without quotes, the version id only in a versioned bucket."""
        obj = {"key": urllib.parse.quote_plus(key, safe="/"), "size": size,
               "eTag": put["ETag"].strip('"'), "sequencer": "0065A1B2C3D4E5F601"}
        if put.get("VersionId"):
            obj["versionId"] = put["VersionId"]
        return {"Records": [{
            "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
            "eventTime": "2026-11-30T06:00:00.000Z", "eventName": name,
            "userIdentity": {"principalId": "AWS:AIDAEXAMPLE"},
            "requestParameters": {"sourceIPAddress": "127.0.0.1"},
            "responseElements": {"x-amz-request-id": "C3D13FE58DE4C810",
                                 "x-amz-id-2": "FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD"},
            "s3": {"s3SchemaVersion": "1.0", "configurationId": "lineage-writer",
                   "bucket": {"name": bucket, "ownerIdentity": {"principalId": "A3NL1KOZZKExample"},
                              "arn": f"arn:aws:s3:::{bucket}"},
                   "object": obj},
        }]}

    def store_objects(self) -> dict[str, str]:
        """Every object of the archive with its ETag: the bytes, as far as S3 tells."""
        out = {}
        for page in self.s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.store_bucket, Prefix=self.store_prefix + "/"):
            for o in page.get("Contents", []):
                out[o["Key"]] = o["ETag"]
        return out

    def store(self) -> ls.Store:
        return ls.open(self.store_url, endpoint_url=self.endpoint)


def sqs_event(bodies: list[str], queue: str = "lineage-events") -> dict:
    arn = f"arn:aws:sqs:us-east-1:000000000000:{queue}"
    return {"Records": [{
        "messageId": str(uuid.uuid4()), "receiptHandle": f"AQEB{secrets.token_hex(16)}",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1764482400000",
                       "SenderId": "AIDAEXAMPLE", "ApproximateFirstReceiveTimestamp": "1764482400001"},
        "messageAttributes": {}, "md5OfBody": __import__("hashlib").md5(body.encode()).hexdigest(),
        "eventSource": "aws:sqs", "eventSourceARN": arn, "awsRegion": "us-east-1",
    } for body in bodies]}


@pytest.fixture()
def env(monkeypatch) -> Env:
    endpoint = localstack_endpoint()
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}))
    tag = secrets.token_hex(4)
    versioned, plain = f"lineage-src-v-{tag}", f"lineage-src-{tag}"
    for b in (versioned, plain):
        s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=versioned, VersioningConfiguration={"Status": "Enabled"})
    prefix = f"lambda-{tag}"
    store_url = f"s3://{s3_bucket()}/{prefix}"
    # What the function's configuration sets (terraform/modules/lambda-writer), and what
    # points the SDKs at LocalStack.
    monkeypatch.setenv("LINEAGE_STORE", store_url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("LINEAGE_FORMAT", raising=False)
    handler = load_handler()
    # The handler's own client: path-style, as LocalStack on 127.0.0.1 needs.
    handler._s3 = boto3.client("s3", region_name="us-east-1",
                               config=Config(s3={"addressing_style": "path"}))
    # Refused SQS messages go to the event queue's DLQ (the module sets the URL); the
    # client is the in-process stand-in: the handler needs no queue to read the event.
    monkeypatch.setenv("LINEAGE_REFUSED_QUEUE_URL", REFUSED_QUEUE)
    handler._sqs = RefusedQueue()
    return Env(endpoint, s3, versioned, plain, store_url, s3_bucket(), prefix, handler)


class RefusedQueue:
    """Stands in for the handler's SQS client: records what `send_message` was given, or
    fails as SQS can (throttled, access denied, message too large)."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.sent: list[dict] = []
        self.fail = fail

    def send_message(self, **kw) -> dict:
        if self.fail is not None:
            raise self.fail
        self.sent.append(kw)
        return {"MessageId": f"dlq-{len(self.sent)}"}


REFUSED_QUEUE = "https://sqs.us-east-1.amazonaws.com/000000000000/lineage-writer-events-dlq"


def logged(caplog, what: str) -> list[dict]:
    out = []
    for r in caplog.records:
        if r.name == "lineage_writer":
            d = json.loads(r.getMessage())
            if d["what"] == what:
                out.append(d)
    return out


def test_s3_object_appended_once_and_the_same_event_again_publishes_nothing(env: Env, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lineage_writer")
    rows = [event_row(i, f"nightly-{i % 2}", "EPSG:25832" if i % 3 else "urn:ogc:def:crs:EPSG::4326")
            for i in range(1, 251)]
    body = ndjson(rows)
    key = "incoming/2026 11 30/batch+0001.ndjson"  # URL-encoded in the event
    put = env.put(env.versioned, key, body)
    event = env.s3_event(env.versioned, key, put, len(body))
    out = env.handler.handler(event, LambdaContext())
    assert out["refused"] == [] and out["skipped"] == [], out
    [done] = out["appended"]
    assert done["object"] == f"s3://{env.versioned}/{key}"
    assert done["commit_key"] == f"s3://{env.versioned}/{key}?versionId={put['VersionId']}"
    assert done["rows"] == 250
    # (run, crs) groups: nightly-0/1 x EPSG:25832/4326: four parts.
    assert done["commits"] == 4 and done["already_committed"] == 0 and done["note"] is None
    before = env.store_objects()
    assert len([k for k in before if k.endswith(".parquet")]) == 4
    store = env.store()
    assert sorted(c.commit_id for c in store.commits()) == sorted(done["commit_ids"])

    # Lambda's retry of the same event (and S3's duplicate delivery): nothing new.
    again = env.handler.handler(event, LambdaContext())
    assert sorted(again["appended"][0]["commit_ids"]) == sorted(done["commit_ids"])
    assert again["appended"][0]["already_committed"] == 4
    assert again["appended"][0]["note"] == "every commit was already there (a retry): nothing published"
    assert env.store_objects() == before
    assert len(store.commits()) == 4
    report = store.verify()
    assert report.clean and report.rows == 250, report.problems
    # A new version of the same key is new data, appended under its own commit key.
    put2 = env.put(env.versioned, key, ndjson(rows[:10]))
    third = env.handler.handler(env.s3_event(env.versioned, key, put2, 0), LambdaContext())
    assert third["appended"][0]["commit_key"].endswith(f"?versionId={put2['VersionId']}")
    assert len(store.commits()) == 4 + third["appended"][0]["commits"]
    assert len(logged(caplog, "appended")) == 3


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_csv_and_parquet_objects_in_an_unversioned_bucket_are_keyed_by_etag(env: Env, kind: str) -> None:
    rows = [event_row(i, "daily-7") for i in range(1, 121)]
    body = csv_bytes(rows) if kind == "csv" else parquet_bytes(rows)
    key = f"drop/events.{kind}"
    put = env.put(env.plain, key, body)
    assert "VersionId" not in put or put["VersionId"] in (None, "null")
    event = env.s3_event(env.plain, key, put, len(body))
    out = env.handler.handler(event, LambdaContext())
    [done] = out["appended"]
    assert done["commit_key"] == f"s3://{env.plain}/{key}?etag={put['ETag'].strip(chr(34))}"
    assert (done["rows"], done["commits"]) == (120, 1)
    before = env.store_objects()
    env.handler.handler(event, LambdaContext())
    assert env.store_objects() == before
    # The part holds exactly the events of the object.
    [c] = env.store().commits()
    assert c.row_count == 120 and c.run_id == "daily-7" and c.target_crs == "EPSG:25832"


def test_an_event_for_bytes_since_overwritten_is_skipped_not_appended(env: Env, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lineage_writer")
    key = "drop/late.ndjson"
    put = env.put(env.plain, key, ndjson([event_row(1, "run-x")]))
    env.put(env.plain, key, ndjson([event_row(2, "run-x")]))  # newer bytes, its own event
    out = env.handler.handler(env.s3_event(env.plain, key, put, 0), LambdaContext())
    assert out["appended"] == [] and len(out["skipped"]) == 1, out
    assert env.store_objects() == {}
    assert logged(caplog, "skipped")[0]["object"] == f"s3://{env.plain}/{key}"


def test_a_bad_object_is_refused_cleanly_logged_with_line_and_field_and_not_raised(env: Env, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lineage_writer")
    rows = [event_row(i, "nightly-0") for i in range(1, 6)]
    rows[2]["target_crs"] = "EPSG:99999"
    body = ndjson(rows)
    put = env.put(env.versioned, "incoming/bad.ndjson", body)
    event = env.s3_event(env.versioned, "incoming/bad.ndjson", put, len(body))
    out = env.handler.handler(event, LambdaContext())  # returns: Lambda does not retry it
    assert out["appended"] == [] and len(out["refused"]) == 1, out
    [refused] = logged(caplog, "refused")
    assert (refused["line"], refused["field"], refused["kind"]) == (3, "target_crs", "InputError")
    assert "line 3" in refused["error"] and "EPSG code 99999" in refused["error"], refused
    assert refused["object"] == f"s3://{env.versioned}/incoming/bad.ndjson"
    assert [r.levelname for r in caplog.records if "refused" in r.getMessage()] == ["ERROR"]
    # Nothing published: not a part, not a pointer, not a commit-key claim.
    assert env.store_objects() == {}
    # An object whose format cannot be told is refused the same way.
    put = env.put(env.versioned, "incoming/events.txt", body)
    out = env.handler.handler(env.s3_event(env.versioned, "incoming/events.txt", put, len(body)), LambdaContext())
    assert "LINEAGE_FORMAT" in out["refused"][0]["error"]
    assert env.store_objects() == {}


def test_sqs_batch_with_one_bad_message_sets_exactly_it_aside(env: Env, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lineage_writer")
    good1 = ndjson([event_row(i, "stream-a") for i in range(1, 31)]).decode()
    bad_rows = [event_row(i, "stream-a") for i in range(31, 34)]
    bad_rows[1]["accuracy_m"] = -1.0
    bad = ndjson(bad_rows).decode()
    good2 = ndjson([event_row(i, "stream-b", "EPSG:4326") for i in range(34, 54)]).decode()
    event = sqs_event([good1, bad, good2])
    ids = [r["messageId"] for r in event["Records"]]
    out = env.handler.handler(event, LambdaContext())
    # Not reported: SQS deletes it with the others; it went to the refused queue instead.
    assert out == {"batchItemFailures": []}
    [sent] = env.handler._sqs.sent
    assert sent["QueueUrl"] == REFUSED_QUEUE and sent["MessageBody"] == bad
    assert sent["MessageAttributes"]["lineage.source.message_id"]["StringValue"] == ids[1]
    [refused] = logged(caplog, "refused")
    assert (refused["message_id"], refused["line"], refused["field"]) == (ids[1], 2, "accuracy_m")
    assert refused["commit_key"] == f"sqs:arn:aws:sqs:us-east-1:000000000000:lineage-events:{ids[1]}"
    assert refused["set_aside"] == REFUSED_QUEUE
    store = env.store()
    assert sorted(c.row_count for c in store.commits()) == [20, 30]
    before = env.store_objects()
    # SQS redelivers the batch (the whole of it, as after a timeout): nothing new is
    # published, and the bad message is set aside again, never reported.
    for r in event["Records"]:
        r["attributes"]["ApproximateReceiveCount"] = "2"
    again = env.handler.handler(event, LambdaContext())
    assert again == out
    assert len(env.handler._sqs.sent) == 2
    assert env.store_objects() == before
    assert store.verify().clean


def test_sqs_messages_not_started_when_time_runs_out_come_back(env: Env) -> None:
    event = sqs_event([ndjson([event_row(1, "late")]).decode()] * 2)
    out = env.handler.handler(event, LambdaContext(remaining_ms=2_000))
    assert out == {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}
    assert env.store_objects() == {}


def test_store_failures_are_retried_by_the_platform(env: Env, monkeypatch, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lineage_writer")
    monkeypatch.setenv("LINEAGE_STORE", f"s3://lineage-no-such-bucket-{secrets.token_hex(4)}/x")
    body = ndjson([event_row(1, "run-y")])
    put = env.put(env.versioned, "incoming/ok.ndjson", body)
    with pytest.raises(ls.StoreError):  # raised: Lambda retries the invocation
        env.handler.handler(env.s3_event(env.versioned, "incoming/ok.ndjson", put, len(body)), LambdaContext())
    event = sqs_event([body.decode()])
    out = env.handler.handler(event, LambdaContext())
    assert out == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert logged(caplog, "failed")[0]["kind"] == "StoreError"


def test_events_it_cannot_take_are_configuration_errors(env: Env, monkeypatch) -> None:
    with pytest.raises(env.handler.RefusedEvent, match="no Records"):
        env.handler.handler({"detail-type": "Scheduled Event"}, LambdaContext())
    with pytest.raises(env.handler.RefusedEvent, match="aws:sns"):
        env.handler.handler({"Records": [{"eventSource": "aws:sns"}]}, LambdaContext())
    monkeypatch.delenv("LINEAGE_STORE")
    with pytest.raises(env.handler.RefusedEvent, match="LINEAGE_STORE"):
        env.handler.handler(sqs_event(["{}"]), LambdaContext())


# --- refused SQS messages, without LocalStack (a local-disk store) -----------------------

@pytest.fixture()
def local(monkeypatch, tmp_path: Path):
    """The handler on a local-disk store, its SQS client the in-process stand-in."""
    monkeypatch.setenv("LINEAGE_STORE", str(tmp_path / "store"))
    monkeypatch.delenv("LINEAGE_REFUSED_QUEUE_URL", raising=False)
    handler = load_handler()
    handler._sqs = RefusedQueue()
    return handler


def mixed_batch() -> tuple[dict, str]:
    bad_rows = [event_row(i, "stream-c") for i in range(1, 5)]
    bad_rows[3]["target_crs"] = "EPSG:99999"
    bad = ndjson(bad_rows).decode()
    return sqs_event([ndjson([event_row(i, "stream-c") for i in range(5, 17)]).decode(), bad]), bad


def test_a_refused_sqs_message_goes_to_the_refused_queue_with_its_refusal(local, monkeypatch, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lineage_writer")
    monkeypatch.setenv("LINEAGE_REFUSED_QUEUE_URL", REFUSED_QUEUE)
    event, bad = mixed_batch()
    ids = [r["messageId"] for r in event["Records"]]
    for receive in ("1", "2", "3", "4"):  # however often SQS redelivers it: never reported
        for r in event["Records"]:
            r["attributes"]["ApproximateReceiveCount"] = receive
        assert local.handler(event, LambdaContext()) == {"batchItemFailures": []}
    sent = local._sqs.sent
    assert len(sent) == 4 and {s["MessageBody"] for s in sent} == {bad}
    attrs = {k: v["StringValue"] for k, v in sent[0]["MessageAttributes"].items()}
    assert attrs["lineage.source.message_id"] == ids[1]
    assert attrs["lineage.source.queue_arn"] == "arn:aws:sqs:us-east-1:000000000000:lineage-events"
    assert (attrs["lineage.refused.line"], attrs["lineage.refused.field"]) == ("4", "target_crs")
    assert sent[0]["MessageAttributes"]["lineage.refused.line"]["DataType"] == "Number"
    assert "EPSG code 99999" in attrs["lineage.refused.error"], attrs
    refused = logged(caplog, "refused")
    assert [(r["line"], r["field"], r["set_aside"]) for r in refused] == [(4, "target_crs", REFUSED_QUEUE)] * 4
    assert refused[0]["dead_letter_message_id"] == "dlq-1"
    # The good message was appended once; the bad one published nothing.
    store = ls.open(os.environ["LINEAGE_STORE"])
    assert [c.row_count for c in store.commits()] == [12]
    assert store.verify().clean


def test_without_a_refused_queue_a_refused_sqs_message_is_logged_and_dropped(local, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lineage_writer")
    event, bad = mixed_batch()
    assert local.handler(event, LambdaContext()) == {"batchItemFailures": []}
    assert local._sqs.sent == []
    [refused] = logged(caplog, "refused")
    assert (refused["line"], refused["field"], refused["set_aside"]) == (4, "target_crs", "dropped")
    assert refused["body_sha256"] == hashlib.sha256(bad.encode()).hexdigest()
    assert refused["body_bytes"] == len(bad.encode())


def test_a_refused_sqs_message_that_cannot_be_set_aside_comes_back(local, monkeypatch, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lineage_writer")
    monkeypatch.setenv("LINEAGE_REFUSED_QUEUE_URL", REFUSED_QUEUE)
    local._sqs = RefusedQueue(fail=ConnectionError("sqs.us-east-1.amazonaws.com: timed out"))
    event, _ = mixed_batch()
    out = local.handler(event, LambdaContext())
    assert out == {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["messageId"]}]}
    assert logged(caplog, "refused") == []
    [failed] = logged(caplog, "failed")
    assert "could not be set aside" in failed["error"] and failed["kind"] == "ConnectionError"
    assert (failed["refusal"]["line"], failed["refusal"]["field"]) == (4, "target_crs")
    # Once the queue takes it again, the next delivery sets it aside.
    local._sqs = RefusedQueue()
    assert local.handler(event, LambdaContext()) == {"batchItemFailures": []}
    assert len(local._sqs.sent) == 1


def test_the_invocation_is_recorded_in_each_pointer_never_a_secret(local, monkeypatch) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "lineage-writer")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "lambda-secret-token-7")
    event = sqs_event([ndjson([event_row(i, "stream-w") for i in range(1, 4)]).decode()])
    assert local.handler(event, LambdaContext(aws_request_id="req-lambda-1")) == {"batchItemFailures": []}
    [commit] = ls.open(os.environ["LINEAGE_STORE"]).commits()
    assert commit.writer is not None
    assert commit.writer["request_id"] == "req-lambda-1"
    assert commit.writer["platform"]["AWS_LAMBDA_FUNCTION_NAME"] == "lineage-writer"
    assert "lambda-secret-token-7" not in commit.to_json()
