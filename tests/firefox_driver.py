"""Headless Firefox (Debian's firefox-esr) driven through Marionette, its own remote protocol.

Playwright drives a stock Firefox only over WebDriver BiDi, with commands that Firefox ESR does
not have yet (``emulation.setMediaFeaturesOverride``: ``new_page`` fails); Marionette is
built into every Firefox and speaks length-prefixed JSON over TCP (``LEN:[0, id, command,
params]``, answered ``[1, id, error, result]``), so the standard library is enough.  The
commands used are the WebDriver ones Marionette names ``WebDriver:*``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

FIREFOX = "firefox-esr"
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C WebDriver element key
#: a fresh profile: Marionette on a free port (written to MarionetteActivePort), no first-run
#: pages, no updates, no telemetry
PREFS = {
    "marionette.port": 0,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.disabledForTesting": True,
    "browser.aboutwelcome.enabled": False,
    # a link's download is saved, unasked, into the profile's downloads/ (see Firefox.download)
    "browser.download.folderList": 2,
    "browser.download.useDownloadDir": True,
    "browser.download.always_ask_before_handling_new_types": False,
    "browser.download.manager.showWhenStarting": False,
    "browser.helperApps.neverAsk.saveToDisk": "application/zip,application/json,text/plain,"
    "text/html,application/toml,application/octet-stream",
}


class MarionetteError(RuntimeError):
    """A command Firefox refused (its WebDriver error name and message)."""


def firefox_or_skip() -> str:
    """The Firefox to drive: skipped where there is none, a failure on CI (which installs it)."""
    if shutil.which(FIREFOX) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{FIREFOX} is missing on CI (.ci/run installs Debian's firefox-esr)")
        pytest.skip("no Firefox on this machine (apt-get install firefox-esr)")
    return FIREFOX


class Firefox:
    """One headless Firefox with one WebDriver session (a context manager)."""

    def __init__(self, width: int = 1100, height: int = 900, binary: str = FIREFOX):
        self.profile = Path(tempfile.mkdtemp(prefix="privlab-firefox-"))
        self.downloads = self.profile / "downloads"
        self.downloads.mkdir()
        prefs = {**PREFS, "browser.download.dir": str(self.downloads)}
        (self.profile / "user.js").write_text(
            "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in prefs.items())
        )
        self.proc = subprocess.Popen(
            [binary, "--headless", "--marionette", "--no-remote", "--profile", str(self.profile),
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._id = 0
        self._buf = b""
        self.sock: socket.socket | None = None
        try:
            self.sock = socket.create_connection(("127.0.0.1", self._port()), timeout=120)
            self._read()  # the greeting: {"applicationType": "gecko", "marionetteProtocol": 3}
            self.cmd("WebDriver:NewSession", {"capabilities": {}})
            self.cmd("WebDriver:SetWindowRect", {"width": width, "height": height})
        except BaseException:
            self.close()
            raise

    def _port(self) -> int:
        port_file = self.profile / "MarionetteActivePort"
        start = time.monotonic()
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() - start > 60:
                raise MarionetteError("Firefox did not start Marionette within 60 s")
            time.sleep(0.1)
        return int(port_file.read_text())

    def _read(self):
        while b":" not in self._buf:
            self._recv()
        size, _, rest = self._buf.partition(b":")
        self._buf = rest
        while len(self._buf) < int(size):
            self._recv()
        msg, self._buf = self._buf[: int(size)], self._buf[int(size) :]
        return json.loads(msg)

    def _recv(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise MarionetteError("Firefox closed the connection")
        self._buf += chunk

    def cmd(self, name: str, params: dict | None = None):
        """Send one command; its result, or :class:`MarionetteError`."""
        self._id += 1
        msg = json.dumps([0, self._id, name, params or {}]).encode()
        self.sock.sendall(str(len(msg)).encode() + b":" + msg)
        while True:
            _, mid, error, result = self._read()
            if mid == self._id:
                break
        if error:
            raise MarionetteError(f"{name}: {error.get('error')}: {error.get('message')}")
        return result

    # -- what a test does --------------------------------------------------------------
    def go(self, url: str) -> None:
        self.cmd("WebDriver:Navigate", {"url": url})

    @property
    def url(self) -> str:
        return self.cmd("WebDriver:GetCurrentURL")["value"]

    def js(self, script: str, *args):
        """Run ``script`` (a function body; ``arguments`` holds ``args``) in the page."""
        return self.cmd("WebDriver:ExecuteScript", {"script": script, "args": list(args)})["value"]

    def find(self, css: str | None = None, *, xpath: str | None = None) -> str:
        using, value = ("css selector", css) if xpath is None else ("xpath", xpath)
        return self.cmd("WebDriver:FindElement", {"using": using, "value": value})["value"][ELEMENT]

    def count(self, css: str) -> int:
        return len(self.cmd("WebDriver:FindElements", {"using": "css selector", "value": css}))

    def text(self, css: str) -> str:
        return self.cmd("WebDriver:GetElementText", {"id": self.find(css)})["value"]

    def click(self, css: str | None = None, *, xpath: str | None = None) -> None:
        self.cmd("WebDriver:ElementClick", {"id": self.find(css, xpath=xpath)})

    def button(self, label: str) -> None:
        """Click the button or link whose text is ``label``."""
        self.click(xpath=f"//*[self::button or self::a][normalize-space()={json.dumps(label)}]")

    def type(self, css: str, text: str, *, clear: bool = True) -> None:
        """Type ``text`` into a field (a file input: the path of the file to upload)."""
        el = self.find(css)
        if clear and self.js("return arguments[0].type", {ELEMENT: el}) != "file":
            self.cmd("WebDriver:ElementClear", {"id": el})
        self.cmd("WebDriver:ElementSendKeys", {"id": el, "text": text})

    def choose(self, select_css: str, value: str) -> None:
        """Pick an option of a select by clicking it, as a person does."""
        self.click(f"{select_css} option[value={json.dumps(value)}]")

    def wait_for(self, css: str, timeout: float = 240) -> None:
        start = time.monotonic()
        while self.count(css) == 0:
            if time.monotonic() - start > timeout:
                raise MarionetteError(f"no {css} after {timeout:.0f} s at {self.url}")
            time.sleep(0.25)

    def alert(self) -> str | None:
        """The text of an open alert, confirm or prompt (None: no dialog is open)."""
        try:
            return self.cmd("WebDriver:GetAlertText")["value"]
        except MarionetteError as e:
            if "no such alert" in str(e):
                return None
            raise

    def download(self, label: str, timeout: float = 60) -> bytes:
        """Click the link whose text is ``label`` and return the file Firefox saves."""
        for f in self.downloads.iterdir():
            f.unlink()
        self.click(xpath=f"//a[normalize-space()={json.dumps(label)}]")
        start = time.monotonic()
        while True:
            files = list(self.downloads.iterdir())
            done = [f for f in files if f.suffix != ".part" and f.stat().st_size]
            if done and len(files) == len(done):
                return done[0].read_bytes()
            if time.monotonic() - start > timeout:
                raise MarionetteError(f"no download from {label!r} after {timeout:.0f} s")
            time.sleep(0.1)

    def window(self, width: int, height: int) -> None:
        self.cmd("WebDriver:SetWindowRect", {"width": width, "height": height})

    def close(self) -> None:
        try:
            if self.sock is not None:
                try:
                    self.cmd("Marionette:Quit")
                except (MarionetteError, OSError):
                    pass
                self.sock.close()
        finally:
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Firefox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
