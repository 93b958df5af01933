#!/usr/bin/env python3
"""The observer page in headless Firefox: serve the demo system under load
(observe_server), load the page, take its DOM twice and check it with the
same checker as Chromium's test (browser_check.py), then save a
screenshot, which the test run keeps.

    firefox.py SERVER CHECKER SCREENSHOT

Firefox is driven through Marionette, its own remote protocol, with the
standard library only: a fresh profile whose prefs.js names a free
Marionette port, then length-prefixed JSON over TCP ("len:[0,id,name,
params]", answered with "len:[1,id,error,result]"). Without Firefox
(the Debian package firefox-esr, which `make deps` installs) it exits 77,
which the test counts as skipped, and says why. Every process it starts
— the server, Firefox in a process group of its own — is ended by its id,
and the profile removed, whatever the outcome.
"""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77


class Marionette:
    """A Marionette client: one command at a time."""

    def __init__(self, port, deadline):
        self.next_id = 0
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("firefox: Marionette did not listen within 90 s")
                time.sleep(0.2)
        self.buf = b""
        hello = self.read()
        if hello.get("applicationType") != "gecko":
            raise SystemExit(f"firefox: not Marionette on port {port}: {hello}")

    def read(self):
        while b":" not in self.buf:
            self.more()
        size, _, rest = self.buf.partition(b":")
        self.buf = rest
        while len(self.buf) < int(size):
            self.more()
        body, self.buf = self.buf[:int(size)], self.buf[int(size):]
        return json.loads(body)

    def more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise SystemExit("firefox: Marionette closed the connection")
        self.buf += chunk

    def call(self, name, params=None):
        self.next_id += 1
        body = json.dumps([0, self.next_id, name, params or {}]).encode()
        self.sock.sendall(str(len(body)).encode() + b":" + body)
        while True:
            kind, msg_id, error, result = self.read()
            if kind == 1 and msg_id == self.next_id:
                break
        if error:
            raise SystemExit(f"firefox: {name} failed: {error}")
        return result

    def script(self, source):
        return self.call("WebDriver:ExecuteScript", {"script": source, "args": []})["value"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_firefox():
    for name in ("firefox-esr", "firefox"):
        path = shutil.which(name)
        if path:
            return path
    return None


def write_profile(profile, port):
    prefs = {
        "marionette.port": port,
        "browser.shell.checkDefaultBrowser": False,
        "browser.startup.homepage_override.mstone": "ignore",
        "browser.aboutwelcome.enabled": False,
        "datareporting.policy.dataSubmissionEnabled": False,
        "toolkit.telemetry.reportingpolicy.firstRun": False,
        "app.update.enabled": False,
        "app.update.auto": False,
        "extensions.update.enabled": False,
        "network.captive-portal-service.enabled": False,
        "network.connectivity-service.enabled": False,
    }
    with open(os.path.join(profile, "prefs.js"), "w", encoding="utf-8") as f:
        for key, value in prefs.items():
            f.write(f"user_pref({json.dumps(key)}, {json.dumps(value)});\n")


def end_group(proc):
    """TERM the process group led by proc, KILL it after 5 s."""
    if proc is None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def end_server(proc):
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_server(server, work):
    port_file = os.path.join(work, "port")
    log = open(os.path.join(work, "server.log"), "w", encoding="utf-8")
    proc = subprocess.Popen([server, port_file, "150"], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(300):
        if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
            with open(port_file, encoding="utf-8") as f:
                return proc, int(f.read())
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    with open(os.path.join(work, "server.log"), encoding="utf-8") as f:
        sys.stderr.write(f.read())
    raise SystemExit("firefox: the demo server did not start")


def wait_polls(ff, beyond, deadline):
    """Wait until the page has drawn the view more than `beyond` times."""
    while True:
        polls = ff.script("return Number(document.body.dataset.polls || 0);")
        if polls > beyond:
            return polls
        if time.monotonic() > deadline:
            raise SystemExit(f"firefox: the page drew the view {polls} times, not more than {beyond}")
        time.sleep(0.1)


def take_dom(ff, path):
    html = ff.script("return document.documentElement.outerHTML;")
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)


def browse(ff, url, work, checker, screenshot):
    ff.call("WebDriver:NewSession", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": True}}})
    ff.call("WebDriver:SetWindowRect", {"width": 1440, "height": 1400})
    ff.call("WebDriver:Navigate", {"url": url})
    deadline = time.monotonic() + 60
    polls = wait_polls(ff, 2, deadline)
    take_dom(ff, os.path.join(work, "first.html"))
    time.sleep(1.5)
    wait_polls(ff, polls + 2, deadline)
    take_dom(ff, os.path.join(work, "second.html"))
    check = subprocess.run([sys.executable, checker, os.path.join(work, "first.html"),
                            os.path.join(work, "second.html")])
    if check.returncode != 0:
        raise SystemExit("firefox: the page does not show what it should (above)")
    png = base64.b64decode(ff.call("WebDriver:TakeScreenshot", {"full": True})["value"])
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("firefox: the screenshot is not a PNG")
    os.makedirs(os.path.dirname(os.path.abspath(screenshot)), exist_ok=True)
    with open(screenshot, "wb") as f:
        f.write(png)
    print(f"firefox: screenshot kept at {screenshot} ({len(png)} bytes)")


def main():
    server, checker, screenshot = sys.argv[1:4]
    firefox = find_firefox()
    if not firefox:
        print("firefox: no firefox-esr (Debian package firefox-esr, `make deps`): skipped")
        return SKIP
    work = tempfile.mkdtemp(prefix="actorc-firefox.")
    server_proc = browser = None
    try:
        server_proc, port = start_server(server, work)
        url = f"http://127.0.0.1:{port}/?interval=250"
        print(f"firefox: the observer of the demo system at {url}")
        profile = os.path.join(work, "profile")
        os.mkdir(profile)
        marionette_port = free_port()
        write_profile(profile, marionette_port)
        env = dict(os.environ, MOZ_HEADLESS="1")
        log = open(os.path.join(work, "firefox.log"), "w", encoding="utf-8")
        browser = subprocess.Popen([firefox, "--headless", "--marionette", "--no-remote",
                                    "--profile", profile, "about:blank"],
                                   stdout=log, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
        ff = Marionette(marionette_port, time.monotonic() + 90)
        browse(ff, url, work, checker, screenshot)
        return 0
    except SystemExit as e:
        log_path = os.path.join(work, "firefox.log")
        if browser is not None and os.path.exists(log_path):
            with open(log_path, encoding="utf-8", errors="replace") as f:
                sys.stderr.write("".join(f.readlines()[-20:]))
        print(e, file=sys.stderr)
        return 1
    finally:
        end_group(browser)
        end_server(server_proc)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
