# SPDX-License-Identifier: Apache-2.0
"""Drives the operator console in a real browser: Debian's headless Chromium through
chromedriver's W3C WebDriver HTTP API (the standard library only, no Selenium).

Signs in, loads every page, replays a dead letter through the UI and checks it left the list,
looks a customer up, and saves a screenshot of each page at 1280 px and at 390 px wide, where
it also checks that nothing is wider than the window. Exits non-zero on the first failure.

    python3 console_browser.py --console URL --key KEY --driver-port PORT --user USER --out DIR
"""
import argparse
import base64
import json
import os
import sys
import time
import urllib.error
import urllib.request


class Browser:
    def __init__(self, driver_url):
        self.driver = driver_url
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                     "--hide-scrollbars", "--force-device-scale-factor=1"]}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.driver + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.load(response)["value"]
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"webdriver {method} {path}: {error.read().decode()[:500]}")

    def s(self, path, method="GET", body=None):
        return self.call(method, f"/session/{self.session}{path}", body)

    def go(self, url):
        self.s("/url", "POST", {"url": url})

    def find(self, css):
        element = self.s("/element", "POST", {"using": "css selector", "value": css})
        return next(iter(element.values()))

    def exists(self, css):
        return len(self.s("/elements", "POST", {"using": "css selector", "value": css})) > 0

    def click(self, css):
        self.s(f"/element/{self.find(css)}/click", "POST", {})

    def type(self, css, text):
        self.s(f"/element/{self.find(css)}/value", "POST", {"text": text})

    def script(self, source):
        return self.s("/execute/sync", "POST", {"script": source, "args": []})

    def url(self):
        return self.s("/url")

    def text(self):
        return self.script("return document.body.innerText")

    def emulate(self, width, height):
        """A phone's viewport, through Chrome's DevTools (a window cannot be made that narrow)."""
        self.s("/goog/cdp/execute", "POST", {"cmd": "Emulation.setDeviceMetricsOverride", "params": {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": True}})

    def screenshot(self, path):
        with open(path, "wb") as file:
            file.write(base64.b64decode(self.s("/screenshot")))

    def quit(self):
        try:
            self.call("DELETE", f"/session/{self.session}")
        except Exception:
            pass


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def status_of(url, cookie):
    """The status of a GET with this Cookie header, redirects not followed."""
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers={"Cookie": cookie}), timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def wait_for(condition, message, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(message)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--console", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--driver-port", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    base = args.console.rstrip("/")
    browser = Browser(f"http://127.0.0.1:{args.driver_port}")
    try:
        # Signing in: a page needs a session, the login form sets it.
        browser.go(base + "/")
        check(browser.url().endswith("/login"), f"a page without a session went to {browser.url()}, not /login")
        browser.screenshot(f"{args.out}/login-1280.png")
        browser.type("#key", "not-the-operator-key-but-long-enough-000000")
        browser.click("button[type=submit]")
        wait_for(lambda: "That is not an operator key." in browser.text(), f"a wrong key was not refused: {browser.url()} {browser.text()[:300]!r}")
        browser.type("#key", args.key)
        browser.click("button[type=submit]")
        wait_for(lambda: browser.exists("#queue-events"), "signing in did not reach the overview")
        check(browser.script("return document.cookie") == "", "the session cookie is readable by scripts")
        print("  signed in; the cookie is HttpOnly")

        pages = {"overview": "/", "dead-letters": "/dead-letters", "customers": "/customers",
                 "endpoints": "/endpoints"}
        for name, path in pages.items():
            browser.go(base + path)
            check(browser.exists("main h1"), f"{path} shows no page")
            browser.screenshot(f"{args.out}/{name}-1280.png")

        # The dead event, replayed through the UI: the confirmation, then it leaves the list.
        browser.go(base + "/dead-letters?queue=events")
        check(browser.exists("#dead-letters"), "no dead letter is listed")
        rows_before = browser.script("return document.querySelectorAll('#dead-letters tr').length - 1")
        item = browser.script("return document.querySelector('#dead-letters td a').textContent")
        browser.click("#dead-letters td a")
        wait_for(lambda: browser.exists("#replay"), f"{item} has no Replay button")
        check("Payload, as stored" in browser.text(), f"{item} shows no payload")
        browser.screenshot(f"{args.out}/dead-letter-1280.png")
        browser.click("#replay")
        wait_for(lambda: "Replay " + item in browser.text(), "replay asked for no confirmation")
        browser.screenshot(f"{args.out}/confirm-1280.png")
        browser.click("button.danger")
        wait_for(lambda: "Replayed " + item in browser.text(), "the replay said nothing")
        remaining = browser.script("return document.querySelectorAll('#dead-letters tr').length")
        rows_after = max(0, remaining - 1)
        check(item not in browser.script(
            "return Array.from(document.querySelectorAll('#dead-letters td a')).map(a => a.textContent).join(' ')"),
            f"{item} is still listed after its replay")
        print(f"  replayed {item} through the UI: {rows_before} dead listed before, {rows_after} after")

        # A customer, looked up by user id.
        browser.go(base + "/customers")
        browser.type("input[name=q]", args.user)
        browser.click("form.filters button")
        wait_for(lambda: browser.exists("#timeline"), f"looking up {args.user} showed no customer")
        text = browser.text()
        check("web_checkout" in text or "apple:" in text, "the customer page shows no entitlement")
        check("entitlement.granted" in text, "the timeline shows no outgoing event")
        browser.screenshot(f"{args.out}/customer-1280.png")
        customer_url = browser.url()

        browser.go(base + "/endpoints")
        browser.click("#endpoints td a")
        wait_for(lambda: browser.exists("#deliveries"), "the endpoint page shows no deliveries")
        browser.screenshot(f"{args.out}/endpoint-1280.png")
        endpoint_url = browser.url()

        # A phone's width: every page fits, tables scroll inside their box.
        browser.emulate(390, 844)
        for name, url in list({k: base + v for k, v in pages.items()}.items()) + [("customer", customer_url), ("endpoint", endpoint_url)]:
            browser.go(url)
            overflow = browser.script("return document.documentElement.scrollWidth - window.innerWidth")
            check(overflow <= 0, f"{name} is {overflow} px wider than a 390 px window")
            browser.screenshot(f"{args.out}/{name}-390.png")
        print(f"  every page fits 390 px; screenshots in {args.out}")

        # Signing out ends the session server-side: the cookie as the browser held it, replayed
        # afterwards from outside the browser, reaches no page.
        browser.emulate(1280, 900)
        browser.go(base + "/")
        cookies = {c["name"]: c["value"] for c in browser.s("/cookie")}
        check("__Host-sluice_console" in cookies, f"the session cookie is not __Host- prefixed: {sorted(cookies)}")
        copied = "__Host-sluice_console=" + cookies["__Host-sluice_console"]
        check(status_of(base + "/", copied) == 200, "the copied cookie did not work before signing out")
        browser.click("form[action='/logout'] button")
        wait_for(lambda: browser.url().endswith("/login"), "signing out did not reach the sign-in page")
        check(status_of(base + "/", copied) == 303, "a copy of the cookie still opened a page after signing out")
        print("  signed out: a copy of the cookie kept from before opens nothing")
    finally:
        browser.quit()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as error:
        print(f"console-check: FAIL: {error}", file=sys.stderr)
        sys.exit(1)
