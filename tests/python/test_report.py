"""`lineage report` in a real browser: Debian's headless Chromium (scripts/test.sh installs
it where missing), driven over the DevTools protocol (websocket-client; no browser
download). Three stores: a clean one, a tampered one (a flipped part byte, a deleted
sealed pointer) and one whose rejection reasons and tool versions hold HTML/JS; and a
report whose run_id holds a script (new stores refuse such a run_id: rendered from the
JSON with `lineage_store.render_report`). For each page: no console error, no network
request that is not the page's own file (no http(s) load at all), the verdict text is the
first heading, problems named, injected strings shown as text with no injected element in
the DOM, a screenshot (kept under target/report-screenshots/) of non-trivial size, and a
PDF print. The JSON of the same stores validates against docs/report.schema.json and
`Store.report` writes the same facts.
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import pytest
import websocket

import lineage_store
from test_interop import event, lineage, ndjson

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/report.schema.json").read_text())
SHOTS = ROOT / "target/report-screenshots"
REASON = "<script>window.__pwned_reason=1</script>\"quoted\" & 'single' <b id=injected-b>bold</b>"
TOOL = "tool\"><img id=injected-img src=x onerror=window.__pwned_tool=1>/1.0"
RUN = "<script>window.__pwned_run=1</script>\"'"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no chromium: scripts/test.sh installs Debian's `chromium` package")


class Browser:
    """One headless Chromium and a DevTools session on one page."""

    def __init__(self) -> None:
        self.profile = tempfile.mkdtemp(prefix="lineage-report-chromium-")
        self.proc = subprocess.Popen(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-background-networking", "--disable-sync",
             "--disable-component-update", "--disable-default-apps", "--mute-audio",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        url = self._devtools_url()
        self.ws = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def _devtools_url(self) -> str:
        """Chromium prints `DevTools listening on ws://...` on stderr once it listens."""
        assert self.proc.stderr is not None
        seen = []
        while True:
            ready, _, _ = select.select([self.proc.stderr], [], [], 60)
            if not ready:
                pytest.fail(f"chromium did not start: {seen}")
            line = self.proc.stderr.readline()
            if not line:
                pytest.fail(f"chromium exited: {seen}")
            seen.append(line.strip())
            if "DevTools listening on " in line:
                return line.split("DevTools listening on ", 1)[1].strip()

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_for(self, method: str) -> dict[str, Any]:
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        while True:
            m = json.loads(self.ws.recv())
            if m.get("method") == method:
                return m
            self.events.append(m)

    def load(self, path: Path) -> list[dict[str, Any]]:
        """Navigate to the file and wait for its load event; the events it caused."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")
        # Everything queued before a round trip after the load event has arrived.
        self.call("Runtime.evaluate", session=True, expression="1")
        return list(self.events)

    def js(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        assert "exceptionDetails" not in r, r
        return r["result"].get("value")

    def screenshot(self, name: str) -> Path:
        data = self.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True)
        SHOTS.mkdir(parents=True, exist_ok=True)
        out = SHOTS / f"{name}.png"
        out.write_bytes(base64.b64decode(data["data"]))
        return out

    def pdf(self) -> bytes:
        return base64.b64decode(self.call("Page.printToPDF", session=True)["data"])

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = Browser()
    try:
        yield b
    finally:
        b.close()


def ok(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 0, (p.stdout, p.stderr)
    return p.stdout.decode()


def make_store(tmp: Path, extra: list[dict] | None = None) -> tuple[str, str, str]:
    """60 events in run-a and run-b, sealed and signed; `extra` appended unsealed.
    Returns (store, public key file, head digest)."""
    store = str(tmp / "store")
    rows = [event(i, "run-a" if i % 2 else "run-b", "EPSG:4326" if i % 3 else "EPSG:3857")
            for i in range(1, 61)]
    ok(lineage("append", "--store", store, "--input", "-", "--format", "ndjson",
               "--batch-rows", "10", stdin=ndjson(rows)))
    ok(lineage("keygen", "--out", str(tmp / "k")))
    head = ok(lineage("seal", "--store", store, "--signing-key", str(tmp / "k.key"))).split("head ")[1].split()[0]
    if extra:
        ok(lineage("append", "--store", store, "--input", "-", "--format", "ndjson", stdin=ndjson(extra)))
    return store, str(tmp / "k.pub"), head


def report(store: str, out: Path, fmt: str, *args: str) -> subprocess.CompletedProcess:
    return lineage("report", "--store", store, "--out", str(out), "--format", fmt, *args)


def check_page(b: Browser, page: Path, name: str) -> dict[str, Any]:
    """What every report page must be; returns facts of its DOM."""
    events = b.load(page)
    errors = [e for e in events
              if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    assert errors == [], errors
    requests = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"]
    assert all(not u.startswith(("http:", "https:")) for u in requests), requests
    assert [u for u in requests if u != page.resolve().as_uri()] == [], requests
    facts = b.js("""(() => {
      const hs = [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')];
      const svgs = [...document.querySelectorAll('svg')];
      return {
        first_heading: hs.length ? hs[0].tagName + ' ' + hs[0].textContent : null,
        h2: hs.filter(h => h.tagName === 'H2').map(h => h.textContent),
        text: document.body.innerText,
        scripts: document.scripts.length,
        injected: document.querySelectorAll('img,iframe,object,embed,b#injected-b,#injected-img').length,
        pwned: Object.keys(window).filter(k => k.startsWith('__pwned')),
        svgs: svgs.length,
        svgs_titled: svgs.filter(s => s.getAttribute('role') === 'img' && s.querySelector('title') && s.querySelector('desc')).length,
        th: document.querySelectorAll('th').length,
        title: document.title,
        external: [...document.querySelectorAll('[src],[href]')].map(e => e.getAttribute('src') || e.getAttribute('href')).filter(u => !u.startsWith('#')),
      };
    })()""")
    assert facts["scripts"] == 0 and facts["injected"] == 0 and facts["pwned"] == [], facts
    assert facts["external"] == [], facts["external"]
    assert facts["first_heading"].startswith("H1 Verdict: "), facts["first_heading"]
    assert facts["svgs"] == facts["svgs_titled"] and facts["svgs"] >= 1, facts
    assert facts["th"] > 10
    assert facts["h2"] == ["What was checked against what", "The store", "The seal chain", "Runs",
                           "How to check it independently"], facts["h2"]
    shot = b.screenshot(name)
    assert shot.stat().st_size > 30_000, (shot, shot.stat().st_size)
    assert b.pdf()[:5] == b"%PDF-"
    return facts


def test_clean_store_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    store, key, head = make_store(tmp_path)
    page = tmp_path / "clean.html"
    out = ok(report(store, page, "html", "--public-key", key, "--expect-head", head))
    assert out.startswith("clean: no problems")
    facts = check_page(browser, page, "clean")
    assert facts["first_heading"] == "H1 Verdict: clean: no problems"
    assert "✔ CLEAN" in facts["text"] and head in facts["text"] and "found in the chain" in facts["text"]
    # The JSON of the same store: valid, same verdict.
    j = tmp_path / "clean.json"
    ok(report(store, j, "json", "--public-key", key, "--expect-head", head))
    data = json.loads(j.read_text())
    jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert data["verdict"]["headline"] == "clean: no problems" and data["identity"]["rows"] == 60
    md = tmp_path / "clean.md"
    ok(report(store, md, "md", "--public-key", key, "--expect-head", head))
    assert md.read_text().splitlines()[0] == "# Verdict: clean: no problems"


def test_tampered_store_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    store, key, head = make_store(tmp_path)
    root = Path(store)
    pointers = sorted((root / "_lineage/commits").rglob("*.json"))
    part = json.loads(pointers[0].read_text())["part_path"]
    data = bytearray((root / part).read_bytes())
    data[len(data) // 2] ^= 1
    (root / part).write_bytes(bytes(data))
    deleted = str(pointers[1].relative_to(root))
    pointers[1].unlink()
    page = tmp_path / "tampered.html"
    p = report(store, page, "html", "--public-key", key, "--expect-head", head)
    assert p.returncode == 1, (p.stdout, p.stderr)
    facts = check_page(browser, page, "tampered")
    assert facts["first_heading"].startswith("H1 Verdict: ") and "problem" in facts["first_heading"]
    assert facts["first_heading"].endswith(" found")
    assert "PROBLEMS FOUND" in facts["text"]
    for kind, key_ in (("digest_mismatch", part), ("sealed_pointer_missing", deleted)):
        assert kind in facts["text"] and key_ in facts["text"], (kind, key_)
    j = tmp_path / "tampered.json"
    assert report(store, j, "json").returncode == 1
    data_ = json.loads(j.read_text())
    jsonschema.validate(data_, SCHEMA, cls=jsonschema.Draft202012Validator)
    kinds = {(g["kind"], i["key"]) for g in data_["verdict"]["groups"] for i in g["items"]}
    assert {("digest_mismatch", part), ("sealed_pointer_missing", deleted)} <= kinds
    md = tmp_path / "tampered.md"
    assert report(store, md, "md").returncode == 1
    text = md.read_text()
    assert f"`{part}`" in text and f"`{deleted}`" in text


def test_injected_markup_is_text_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    hostile = event(1007, "run-x", "EPSG:4326")
    hostile.update(outcome="rejected", rejection_reason=REASON, tool_version=TOOL,
                   accuracy_m=None, strategy_index=None)
    store, _, _ = make_store(tmp_path, [hostile])
    page = tmp_path / "hostile.html"
    ok(report(store, page, "html"))
    facts = check_page(browser, page, "hostile")
    assert REASON in facts["text"] and TOOL in facts["text"]
    # A run_id holding a script (refused by new stores): the report's data, rendered.
    j = tmp_path / "hostile.json"
    ok(report(store, j, "json"))
    data = json.loads(j.read_text())
    jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)
    for run in data["runs"]["items"]:
        if run["run_id"] == "run-x":
            run["run_id"] = RUN
    page2 = tmp_path / "hostile-run.html"
    page2.write_text(lineage_store.render_report(data, "html"))
    facts2 = check_page(browser, page2, "hostile-run")
    assert f"Run {RUN}" in facts2["text"] and REASON in facts2["text"]
    md = lineage_store.render_report(json.dumps(data), "md")
    assert "<script" not in md and "<img" not in md and "&lt;script&gt;" in md


def test_store_report_from_python(tmp_path: Path) -> None:
    store, key, head = make_store(tmp_path)
    s = lineage_store.open(store)
    out = tmp_path / "py.html"
    data = s.report(out, public_key=key, expect_head=head, run_id=["run-a"])
    jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert data["verdict"]["clean"] is True and data["checked"]["head"]["found"] is True
    assert [r["run_id"] for r in data["runs"]["items"]] == ["run-a"]
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "Verdict: clean: no problems" in html
    with pytest.raises(lineage_store.LineageError, match="the file exists"):
        s.report(out)
    md = tmp_path / "py.md"
    assert s.report(md, "md", force=True)["identity"]["rows"] == 60
    assert md.read_text().startswith("# Verdict: clean: no problems")
    assert lineage_store.render_report(data, "json") == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    with pytest.raises(lineage_store.LineageError, match="expected html, md or json"):
        s.report(tmp_path / "x", "pdf")
