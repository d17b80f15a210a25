"""Render the report in headless Chromium (DevTools protocol): no console errors, no network
requests, every chart drawn with marks; a screenshot is saved under the test's tmp dir."""
from __future__ import annotations

import base64
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from serverbench.exporters.report import write_report

from test_report import load_fixture  # tests/ is on sys.path (pytest rootdir import mode)

PORTS = range(20400, 20500)  # our share of the allowed port range
WIDTH = 1400


def _require(what: str, ok: bool) -> None:
    """Missing tools skip locally but fail in CI (the Makefile installs them there)."""
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing in CI (the Makefile should install it)")
    pytest.skip(f"{what} not installed (apt-get install -y chromium; pip install websocket-client)")


def _free_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20400-20499")


class DevTools:
    """A minimal Chrome DevTools Protocol client over one page's websocket."""

    def __init__(self, ws_url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            self.events.append(json.loads(self.ws.recv()))

    def close(self) -> None:
        self.ws.close()


@pytest.fixture
def chromium(tmp_path: Path):
    exe = shutil.which("chromium")
    _require("chromium", exe is not None)
    _require("websocket-client", importlib.util.find_spec("websocket") is not None)
    port = _free_port()
    log = open(tmp_path / "chromium.log", "wb")
    proc = subprocess.Popen(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
         f"--user-data-dir={tmp_path / 'profile'}", f"--remote-debugging-port={port}",
         "--remote-debugging-address=127.0.0.1", f"--window-size={WIDTH},1000", "about:blank"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        ws_url = None
        deadline = time.monotonic() + 60
        while ws_url is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chromium did not start: {(tmp_path / 'chromium.log').read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
                ws_url = pages[0]["webSocketDebuggerUrl"] if pages else None
            except OSError:
                pass
            if ws_url is None:
                time.sleep(0.2)
        cdp = DevTools(ws_url)
        yield cdp
        cdp.close()
    finally:
        # The browser and its helpers share our new session: stop that process group only,
        # and wait until every member is gone (renderers outlive the main process briefly).
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                proc.poll()
                try:
                    os.killpg(proc.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                continue
            break
        proc.wait(timeout=10)
        log.close()


SUMMARY_JS = """
window.serverbenchReady.then(function (n) {
  var charts = Array.prototype.map.call(document.querySelectorAll('.js-plotly-plot'), function (gd) {
    var marks = gd.querySelectorAll('.barlayer .point path, .scatterlayer .trace path.js-line, ' +
                                    '.scatterlayer .point').length;
    return {id: gd.id, traces: gd.data.length, marks: marks, width: gd.offsetWidth, height: gd.offsetHeight};
  });
  return JSON.stringify({declared: n, charts: charts, height: document.documentElement.scrollHeight});
})
"""


def test_report_renders_in_chromium(chromium: DevTools, tmp_path: Path) -> None:
    store, run_id = load_fixture().build_store(tmp_path / "bench.db")
    paths = write_report(store, run_id, tmp_path / "reports")

    cdp = chromium
    for domain in ("Runtime", "Log", "Network", "Page"):
        cdp.call(f"{domain}.enable")
    cdp.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=1000, deviceScaleFactor=1, mobile=False)
    cdp.call("Page.navigate", url=paths.html.as_uri())
    cdp.wait_event("Page.loadEventFired", timeout=90)
    res = cdp.call("Runtime.evaluate", expression=SUMMARY_JS, awaitPromise=True, returnByValue=True)
    assert "exceptionDetails" not in res, res
    summary = json.loads(res["result"]["value"])

    # Screenshots first, so a failure below still leaves something to look at.
    for name, height in (("report.png", 4000), ("report-full.png", min(summary["height"], 16000))):
        shot = cdp.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                        clip={"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1})
        (tmp_path / name).write_bytes(base64.b64decode(shot["data"]))
    png = (tmp_path / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000

    errors = [e for e in cdp.events
              if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") in ("error", "assert"))
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"].get("level") == "error")]
    assert errors == [], errors
    external = [e["params"]["request"]["url"] for e in cdp.events if e.get("method") == "Network.requestWillBeSent"
                and not e["params"]["request"]["url"].startswith(("file:", "data:", "blob:", "about:"))]
    assert external == [], f"the report fetched from the network: {external}"

    charts = summary["charts"]
    assert len(charts) == summary["declared"] >= 10  # the synthetic run yields well over ten charts
    empty = [c for c in charts if c["traces"] == 0 or c["marks"] == 0 or c["height"] < 200]
    assert empty == [], f"charts without drawn marks: {empty}"
    print(f"{len(charts)} charts drawn; screenshot: {tmp_path / 'report.png'}")
