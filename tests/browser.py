"""A headless Chromium driven through the DevTools protocol over its pipe (--remote-debugging-pipe: JSON messages
ended by a NUL byte, the browser reading on its fd 3 and writing on its fd 4), so that a test clicks links, goes
back, reloads and reads the page as a reader would; stdlib only."""

import json
import os
import subprocess
import time


class Browser:
    """One headless Chromium with one page; ``call`` sends a DevTools command to the page and returns its result."""

    def __init__(self, executable, profile, width=1400, height=1000):
        to_browser, self._theirs_in = os.pipe()  # the browser reads to_browser as its fd 3
        self._theirs_out, from_browser = os.pipe()  # and writes its fd 4 into from_browser
        command = [
            executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-pipe",
            "--disable-back-forward-cache",  # going back loads the page again, so its load event always comes
            "--user-data-dir=%s" % profile,
            "--window-size=%d,%d" % (width, height),
        ]

        def onto_3_and_4():  # in the child, before exec: copies first, so that neither end overwrites the other
            mine, theirs = os.dup(to_browser), os.dup(from_browser)
            os.dup2(mine, 3)
            os.dup2(theirs, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.process = subprocess.Popen(
            command,
            preexec_fn=onto_3_and_4,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._write, self._read = os.fdopen(self._theirs_in, "wb"), os.fdopen(self._theirs_out, "rb")
        self._next, self._buffer, self.events = 0, b"", []
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")

    def _message(self):
        while b"\0" not in self._buffer:
            chunk = os.read(self._read.fileno(), 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(text)

    def _send(self, method, params=None, session=None):
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._write.write(json.dumps(message).encode() + b"\0")
        self._write.flush()
        while True:
            found = self._message()
            if found.get("id") == self._next:
                if "error" in found:
                    raise RuntimeError("%s: %s" % (method, found["error"]))
                return found["result"]
            self.events.append(found)

    def call(self, method, **params):
        return self._send(method, params, self.session)

    def wait_for_load(self, timeout=30):
        """Wait for the page's next load event (one that came during an earlier call counts)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for i, event in enumerate(self.events):
                if event.get("method") == "Page.loadEventFired":
                    del self.events[: i + 1]
                    return
            self.events.append(self._message())
        raise TimeoutError("no page load in %d s" % timeout)

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError("%s: %s" % (expression, result["exceptionDetails"]))
        return result["result"].get("value")

    def open(self, url):
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for_load()

    def click(self, selector):
        """Click the element ``selector`` finds and wait for the page it opens."""
        self.events.clear()
        try:
            self.evaluate("document.querySelector(%s).click()" % json.dumps(selector))
        except RuntimeError as error:  # the navigation the click starts may cut its own evaluation off
            if "Inspected target navigated or closed" not in str(error):
                raise
        self.wait_for_load()

    def back(self):
        """Go back one entry in the page's history and wait for that page to load. Through the DevTools history
        rather than ``history.back()`` in the page, whose evaluation the navigation can cut off before it
        answers ("Inspected target navigated or closed")."""
        history = self.call("Page.getNavigationHistory")
        entry = history["entries"][history["currentIndex"] - 1]
        self.events.clear()
        self.call("Page.navigateToHistoryEntry", entryId=entry["id"])
        self.wait_for_load()

    def download(self, selector, folder, timeout=30):
        """Click the link ``selector`` finds, a file the browser saves rather than shows, and wait until it is saved
        into ``folder``; returns its path."""
        self._send(
            "Browser.setDownloadBehavior",
            {"behavior": "allowAndName", "downloadPath": str(folder), "eventsEnabled": True},
        )
        self.events.clear()
        self.evaluate("document.querySelector(%s).click()" % json.dumps(selector))
        end, guid = time.monotonic() + timeout, None
        while time.monotonic() < end:
            event = self.events.pop(0) if self.events else self._message()
            params = event.get("params") or {}
            if event.get("method") == "Browser.downloadWillBegin":
                guid = params["guid"]
            elif (
                event.get("method") == "Browser.downloadProgress"
                and params.get("state") == "completed"
                and params.get("guid") == guid
            ):
                return os.path.join(str(folder), guid)
        raise TimeoutError("no download in %d s" % timeout)

    def close(self):
        try:
            self._send("Browser.close")
        except (RuntimeError, OSError):
            pass
        self.process.wait(timeout=30)
        self._write.close()
        self._read.close()
