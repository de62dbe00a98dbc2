#!/usr/bin/env python3
"""Watches a page of `airtap serve` in headless Chromium, for the tests.

    page-check.py URL SECONDS SCREENSHOT.png
    page-check.py --recordings URL SECONDS SCREENSHOT.png

Drives Chromium through the DevTools protocol over --remote-debugging-pipe (no websocket, no
port), presses play on the first <audio>, and every 0.25 s for at most SECONDS records what a person
would see: the first card's title, and the audio element's currentTime, stopping once it has
seen two titles, one of them the station's at that moment, and more than 3 s played (a slow
machine takes longer). It also reads the server's
/status-json.xsl at the same moments, so the caller can compare the title shown with the
station's current one. Prints one JSON object: {"stationTitleBefore": the station's title
as the page loads, "samples": [...], "errors": [...]}; saves a
screenshot at the end. Exit 0 when it could watch the page at all; the caller judges.

--recordings: the /recordings page instead. Waits for its list, presses play on the first
<audio> (its players load nothing until then) and, every 0.25 s for at most SECONDS, records
the element's readyState, duration, currentTime and error code, stopping once it has metadata
(readyState >= 1). Prints {"recordings": N, "firstTitle": ..., "samples": [...], "errors": [...]}.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome") if os.path.exists(p)), None)


class DevTools:
    def __init__(self, profile):
        cmd_read, self.cmd_write = os.pipe()
        self.out_read, out_write = os.pipe()

        def wire_pipes():
            # Copies first: a pipe end may already be fd 3 or 4, and dup2 onto itself would
            # leave it close-on-exec.
            command, output = os.dup(cmd_read), os.dup(out_write)
            os.dup2(command, 3)
            os.dup2(output, 4)

        self.process = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--mute-audio", "--no-first-run",
             "--autoplay-policy=no-user-gesture-required", "--remote-debugging-pipe", "--user-data-dir=" + profile,
             "--window-size=900,700", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire_pipes, close_fds=False)
        os.close(cmd_read)
        os.close(out_write)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def call(self, method, params=None, session=None, timeout=20):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.cmd_write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)
        raise TimeoutError(method)

    def _read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.out_read, 1 << 16)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def station_title(url):
    base = url.split("/", 3)
    status = f"{base[0]}//{base[2]}/status-json.xsl"
    with urllib.request.urlopen(status, timeout=30) as answer:
        source = json.load(answer)["icestats"].get("source")
    if isinstance(source, list):
        source = source[0] if source else None
    return (source or {}).get("title")


def open_page(tools, url, ready_expression):
    """A new tab at `url`; returns its session once `ready_expression` is truthy (or 60 s passed:
    a loaded machine parses slowly, and the wait ends as soon as it is true)."""
    target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = tools.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    tools.call("Page.enable", session=session)
    tools.call("Runtime.enable", session=session)
    tools.call("Page.navigate", {"url": url}, session=session)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = tools.call("Runtime.evaluate", {"expression": ready_expression, "returnByValue": True}, session=session)
        if found.get("result", {}).get("value", 0):
            break
        time.sleep(0.1)
    return session


def check_recordings(url, seconds, screenshot):
    errors, samples, report = [], [], {}
    with tempfile.TemporaryDirectory() as profile:
        tools = DevTools(profile)
        try:
            # Counted once the whole document is parsed: the list arrives in pieces on a slow machine.
            session = open_page(tools, url, "document.readyState !== 'loading' && document.querySelectorAll('li.recording audio').length")
            listed = tools.call("Runtime.evaluate", {"expression": """JSON.stringify({
                recordings: document.querySelectorAll('li.recording').length,
                firstTitle: (document.querySelector('li.recording .title') || {}).textContent || null})""",
                "returnByValue": True}, session=session)["result"]["value"]
            report.update(json.loads(listed))
            played = tools.call("Runtime.evaluate", {
                "expression": "document.querySelector('li.recording audio').play().then(() => 'playing', e => 'play failed: ' + e)",
                "awaitPromise": True, "userGesture": True, "returnByValue": True}, session=session, timeout=60)
            state = played.get("result", {}).get("value")
            if state != "playing":
                errors.append(str(state))
            start = time.monotonic()
            while time.monotonic() - start < seconds:
                shown = tools.call("Runtime.evaluate", {"expression": """(function () {
                    var a = document.querySelector('li.recording audio');
                    return JSON.stringify({readyState: a.readyState, duration: isFinite(a.duration) ? a.duration : null,
                                           currentTime: a.currentTime, audioError: a.error ? a.error.code : null});
                    })()""", "returnByValue": True}, session=session)["result"]["value"]
                sample = json.loads(shown)
                sample["t"] = round(time.monotonic() - start, 2)
                samples.append(sample)
                if sample["readyState"] >= 1 or sample["audioError"] is not None:
                    break
                time.sleep(0.25)
            shot = tools.call("Page.captureScreenshot", {"format": "png"}, session=session)
            with open(screenshot, "wb") as out:
                out.write(base64.b64decode(shot["data"]))
        except Exception as error:  # reported to the caller, which fails the test with it
            errors.append(f"{type(error).__name__}: {error}")
        finally:
            tools.close()
    report.update({"samples": samples, "errors": errors})
    print(json.dumps(report))
    return 0


def main():
    if sys.argv[1] == "--recordings":
        if CHROMIUM is None:
            print(json.dumps({"samples": [], "errors": ["chromium is not installed"]}))
            return 2
        return check_recordings(sys.argv[2], float(sys.argv[3]), sys.argv[4])
    url, seconds, screenshot = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    if CHROMIUM is None:
        print(json.dumps({"samples": [], "errors": ["chromium is not installed"]}))
        return 2
    errors = []
    samples = []
    title_before = None
    with tempfile.TemporaryDirectory() as profile:
        tools = DevTools(profile)
        try:
            target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = tools.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            tools.call("Page.enable", session=session)
            tools.call("Runtime.enable", session=session)
            # The page may show this one until its first poll after the samples begin.
            title_before = station_title(url)
            tools.call("Page.navigate", {"url": url}, session=session)
            # The page has loaded once its cards are there.
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                found = tools.call("Runtime.evaluate", {"expression": "document.querySelectorAll('section.mount').length",
                                                        "returnByValue": True}, session=session)
                if found.get("result", {}).get("value", 0) > 0:
                    break
                time.sleep(0.1)
            played = tools.call("Runtime.evaluate", {
                "expression": "document.querySelector('audio').play().then(() => 'playing', e => 'play failed: ' + e)",
                "awaitPromise": True, "userGesture": True, "returnByValue": True}, session=session)
            state = played.get("result", {}).get("value")
            if state != "playing":
                errors.append(str(state))
            start = time.monotonic()
            while time.monotonic() - start < seconds:
                shown = tools.call("Runtime.evaluate", {"expression": """JSON.stringify({
                    title: document.querySelector('section.mount .title').textContent,
                    name: document.querySelector('section.mount .name').textContent,
                    currentTime: document.querySelector('audio').currentTime,
                    audioError: document.querySelector('audio').error ? document.querySelector('audio').error.code : null})""",
                    "returnByValue": True}, session=session)["result"]["value"]
                sample = json.loads(shown)
                sample["stationTitle"] = station_title(url)
                sample["t"] = round(time.monotonic() - start, 2)
                samples.append(sample)
                shown = {each["title"] for each in samples if each["title"]}
                matched = any(each["title"] and each["title"] == each["stationTitle"] for each in samples)
                if len(shown) >= 2 and matched and max(each["currentTime"] or 0 for each in samples) > 3:
                    break
                time.sleep(0.25)
            shot = tools.call("Page.captureScreenshot", {"format": "png"}, session=session)
            with open(screenshot, "wb") as out:
                out.write(base64.b64decode(shot["data"]))
        except Exception as error:  # reported to the caller, which fails the test with it
            errors.append(f"{type(error).__name__}: {error}")
        finally:
            tools.close()
    print(json.dumps({"stationTitleBefore": title_before, "samples": samples, "errors": errors}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
