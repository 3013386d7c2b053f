"""The seals' RFC 3161 tokens (`lineage seal --tsa URL`) checked by an implementation nobody
here wrote: trailofbits' rfc3161-client, against the stored request (imprint, nonce) and
the seal's own bytes. The TSA is OpenSSL's (`openssl ts -reply`) behind a loopback HTTP
handler started and stopped by each test, with a root and a TSA certificate made here.

rfc3161-client refuses a response whose embedded certificate SET is not in DER order, which
OpenSSL writes when it embeds the whole chain; a TSA that embeds its signer certificate only
(as configured here) is read by both, and the chain case is kept as a test of its own.

Run by scripts/test.sh with LINEAGE_BIN pointing at the built binary.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
import rfc3161_client
from cryptography import x509
from test_interop import event, ndjson

LINEAGE = os.environ.get("LINEAGE_BIN") or str(Path(__file__).resolve().parents[2] / "target/debug/lineage")

TSA_EXT = """[v3_tsa]
basicConstraints = critical, CA:false
extendedKeyUsage = critical, timeStamping
keyUsage = critical, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


def lineage(*args: str, stdin: bytes | None = None, code: int = 0) -> str:
    r = subprocess.run([LINEAGE, *args], input=stdin, capture_output=True, check=False)
    assert r.returncode == code, (r.stdout.decode(), r.stderr.decode())
    return r.stdout.decode()


def openssl(d: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)


def make_pki(d: Path, embed_chain: bool, signer_twice: bool = False) -> None:
    """ca.pem (P-384 root), tsa.pem (RSA, timeStamping) issued by it, tsa.cnf
    (`signer_twice`: the TSA embeds its own certificate a second time)."""
    openssl(d, "req", "-x509", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "3650", "-subj", "/CN=Test Root CA",
            "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    (d / "ext.cnf").write_text(TSA_EXT)
    openssl(d, "req", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout", "tsa.key", "-out", "tsa.csr",
            "-subj", "/CN=Test TSA")
    openssl(d, "x509", "-req", "-in", "tsa.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "tsa.pem", "-days", "365", "-extfile", "ext.cnf", "-extensions", "v3_tsa")
    # OpenSSL embeds the signer's certificate (the request asks for it); `certs` adds the root.
    certs = f"certs = {d / 'ca.pem'}\n" if embed_chain else ""
    certs = f"certs = {d / 'tsa.pem'}\n" if signer_twice else certs
    (d / "serial").write_text("01\n")
    (d / "tsa.cnf").write_text(
        f"""[tsa]
default_tsa = tsa_config1
[tsa_config1]
serial = {d / 'serial'}
signer_cert = {d / 'tsa.pem'}
{certs}signer_key = {d / 'tsa.key'}
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256, sha384, sha512
accuracy = secs:1
clock_precision_digits = 6
ess_cert_id_alg = sha256
"""
    )


class _Handler(http.server.BaseHTTPRequestHandler):
    pki: Path

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        assert self.headers["Content-Type"] == "application/timestamp-query"
        body = self.rfile.read(int(self.headers["Content-Length"]))
        q, r = self.pki / "q.tsq", self.pki / "r.tsr"
        q.write_bytes(body)
        openssl(self.pki, "ts", "-reply", "-config", str(self.pki / "tsa.cnf"), "-queryfile", str(q), "-out", str(r))
        answer = r.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/timestamp-reply")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


def tsa(d: Path) -> Iterator[str]:
    handler = type("Handler", (_Handler,), {"pki": d})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/tsa"
    finally:
        server.shutdown()
        server.server_close()
        t.join()


def sealed_store(tmp_path: Path, embed_chain: bool, signer_twice: bool = False) -> tuple[Path, Path]:
    """A store with two seals, each timestamped by `seal --tsa`; returns (store, pki dir)."""
    pki = tmp_path / "pki"
    pki.mkdir()
    make_pki(pki, embed_chain, signer_twice)
    store = tmp_path / "store"
    for url in tsa(pki):
        for n in range(2):
            lineage("append", "--store", str(store), stdin=ndjson([event(10 * n + i, "run-a", "EPSG:4326") for i in range(3)]))
            out = json.loads(lineage("seal", "--store", str(store), "--tsa", url, "--json"))
            assert [s["seq"] for s in out["timestamps"]["stamped"]] == [n + 1], out
    return store, pki


def stored(store: Path, seq: int) -> tuple[bytes, bytes, bytes]:
    """(seal, request, response) of seal `seq`."""
    t = store / "_lineage/timestamps"
    return (
        (store / f"_lineage/seals/{seq:020d}.json").read_bytes(),
        (t / f"{seq:020d}.tsq").read_bytes(),
        (t / f"{seq:020d}.tsr").read_bytes(),
    )


def parse_request(request: bytes) -> rfc3161_client.TimeStampRequest:
    """The stored request, parsed by rfc3161-client's own parser (it exports a decoder for
    responses only)."""
    from rfc3161_client import _rust

    req: rfc3161_client.TimeStampRequest = _rust.parse_timestamp_request(request)
    return req


def verifier(pki: Path, request: bytes) -> rfc3161_client.Verifier:
    root = x509.load_pem_x509_certificate((pki / "ca.pem").read_bytes())
    req = parse_request(request)
    return rfc3161_client.VerifierBuilder.from_request(req).add_root_certificate(root).build()


def test_tokens_verify_with_rfc3161_client(tmp_path: Path) -> None:
    store, pki = sealed_store(tmp_path, embed_chain=False)
    for seq in (1, 2):
        seal, request, response = stored(store, seq)
        resp = rfc3161_client.decode_timestamp_response(response)
        assert resp.status == 0
        # The imprint is the seal's digest, the nonce the stored request's.
        assert verifier(pki, request).verify_message(resp, seal)
        assert resp.tst_info.nonce == parse_request(request).nonce
    # Our verify agrees, and names the TSA's time.
    out = lineage("verify", "--store", str(store), "--tsa-root", str(pki / "ca.pem"))
    assert "2 of 2 seals' times backed" in out, out
    # The audit report's JSON, with the TSA's times, still validates against its schema.
    schema = json.loads((Path(__file__).resolve().parents[2] / "docs/report.schema.json").read_text())
    data = json.loads(lineage("report", "--store", str(store), "--tsa-root", str(pki / "ca.pem"), "--format", "json", "--out", "-"))
    jsonschema.validate(data, schema, cls=jsonschema.Draft202012Validator)
    head = data["checked"]["head"]
    assert head["tsa_checked"] is True
    gen = rfc3161_client.decode_timestamp_response(stored(store, 2)[2]).tst_info.gen_time
    assert head["tsa_utc"].startswith(gen.strftime("%Y-%m-%dT%H:%M:%S")), (head, gen)


def test_a_changed_seal_is_refused_by_rfc3161_client(tmp_path: Path) -> None:
    store, pki = sealed_store(tmp_path, embed_chain=False)
    seal, request, response = stored(store, 2)
    resp = rfc3161_client.decode_timestamp_response(response)
    with pytest.raises(rfc3161_client.VerificationError):
        verifier(pki, request).verify_message(resp, seal.replace(b"{", b"{ ", 1))
    # A token from another seal: refused by both.
    other = stored(store, 1)[2]
    with pytest.raises(rfc3161_client.VerificationError):
        verifier(pki, request).verify_message(rfc3161_client.decode_timestamp_response(other), seal)
    (store / "_lineage/timestamps/00000000000000000002.tsr").write_bytes(other)
    out = lineage("verify", "--store", str(store), "--tsa-root", str(pki / "ca.pem"), code=1)
    assert "PROBLEM bad_timestamp: _lineage/timestamps/00000000000000000002.tsr" in out, out


def test_a_whole_chain_embedded_is_refused_by_rfc3161_client_but_checks_here(tmp_path: Path) -> None:
    """OpenSSL writes the certificates of the chain in the order given, not DER's SET order:
    rfc3161-client refuses to decode such a response; our verify sorts the SET as DER does
    and checks the token, as `openssl ts -verify` does."""
    store, pki = sealed_store(tmp_path, embed_chain=True)
    seal, request, response = stored(store, 1)
    with pytest.raises(ValueError):
        verifier(pki, request).verify_message(rfc3161_client.decode_timestamp_response(response), seal)
    out = lineage("verify", "--store", str(store), "--tsa-root", str(pki / "ca.pem"))
    assert "2 of 2 seals' times backed" in out, out


def test_a_certificate_embedded_twice_is_accepted_as_openssl_and_rfc3161_client_do(tmp_path: Path) -> None:
    """A TSA that embeds its certificate twice (`certs` naming the signer again: OpenSSL
    adds it without looking) writes a certificate SET with a duplicate. `openssl ts -verify`
    and rfc3161-client accept the token; so does our verify (the duplicate adds nothing to
    the chain, and the signature does not cover the SET)."""
    store, pki = sealed_store(tmp_path, embed_chain=False, signer_twice=True)
    seal, request, response = stored(store, 1)
    token = tmp_path / "token.der"
    (tmp_path / "r.tsr").write_bytes(response)
    (tmp_path / "seal").write_bytes(seal)
    openssl(tmp_path, "ts", "-reply", "-in", "r.tsr", "-token_out", "-out", str(token))
    certs = subprocess.run(["openssl", "pkcs7", "-inform", "DER", "-in", str(token), "-print_certs", "-noout"],
                           check=True, capture_output=True, text=True).stdout
    assert certs.count("subject=CN = Test TSA") == 2, certs
    openssl(tmp_path, "ts", "-verify", "-data", "seal", "-in", "r.tsr", "-CAfile", str(pki / "ca.pem"))
    assert verifier(pki, request).verify_message(rfc3161_client.decode_timestamp_response(response), seal)
    out = lineage("verify", "--store", str(store), "--tsa-root", str(pki / "ca.pem"))
    assert "2 of 2 seals' times backed" in out, out


def test_the_package_verify_checks_the_tokens_against_tsa_root(tmp_path: Path) -> None:
    """`Store.verify(tsa_root=…)` as `lineage verify --tsa-root`: every token checked; a
    token of another seal named; refused with `since_seal`."""
    import lineage_store as ls

    store, pki = sealed_store(tmp_path, embed_chain=False)
    s = ls.open(str(store))
    unchecked = s.verify().to_dict()
    assert unchecked["seal_times_checked"] is False and len(unchecked["seal_times"]) == 2
    report = s.verify(tsa_root=pki / "ca.pem", grace="0s")
    data = report.to_dict()
    assert report.clean, report.problems
    assert data["seal_times_checked"] is True
    assert [(t["seq"], t["checked"]) for t in data["seal_times"]] == [(1, True), (2, True)], data["seal_times"]
    (store / "_lineage/timestamps/00000000000000000002.tsr").write_bytes(stored(store, 1)[2])
    bad = s.verify(tsa_root=str(pki / "ca.pem"))
    assert [(p.kind, p.key) for p in bad.problems] == [("bad_timestamp", "_lineage/timestamps/00000000000000000002.tsr")]
    with pytest.raises(ls.InputError, match="since_seal"):
        s.verify(tsa_root=pki / "ca.pem", since_seal=True)
    with pytest.raises(ls.InputError, match="tsa_root"):
        s.verify(tsa_root=tmp_path / "missing.pem")


def test_the_package_seal_asks_a_tsa_and_catches_up(tmp_path: Path) -> None:
    """`Store.seal(tsa=…)`: a TSA that is down is said, not raised; the next call backs the
    earlier seal's time."""
    import socket

    import lineage_store as ls
    from pkg_support import events

    pki = tmp_path / "pki"
    pki.mkdir()
    make_pki(pki, embed_chain=False)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}/tsa"
    store = ls.open(tmp_path / "store")
    store.append(events(10, runs=("run-a",)))
    first = store.seal(tsa=down, tsa_timeout=5.0)
    assert first.seq == 1 and first.time_backed == []
    assert first.time_not_backed is not None and first.time_not_backed.startswith("seal 1: "), first
    for url in tsa(pki):
        again = store.seal(tsa=url)
        assert (again.seq, again.added) == (1, 0)
        assert again.time_backed == [1] and again.time_not_backed is None, again
    out = lineage("verify", "--store", str(tmp_path / "store"), "--tsa-root", str(pki / "ca.pem"))
    assert "1 of 1 seals' times backed" in out, out
