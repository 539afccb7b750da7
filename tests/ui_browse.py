"""Open pages of the MLflow UI in headless Chromium and print what they render (`make test-ui`).

Run by tests/test_ui.py with the Python of the cached UI venv (Playwright lives there, not in
evalkit's venv). Reads a JSON list of pages on stdin, each ``{"name", "url", "wait_for"}`` and
optionally ``"click"`` (a text to click once ``wait_for`` shows, then ``"then"`` to wait for);
prints ``{name: the page's visible text}`` as JSON and saves ``<name>.png`` in the folder given
as the only argument. Debian's chromium is driven through its executable path: Playwright's own
browser download needs the internet.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
TIMEOUT_MS = 180_000  # the UI's first render on a loaded 2-core machine takes tens of seconds


def main() -> None:
    shots = Path(sys.argv[1])
    shots.mkdir(parents=True, exist_ok=True)
    pages = json.load(sys.stdin)
    texts = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1900, "height": 1100})
        for spec in pages:
            page.goto(spec["url"])
            page.get_by_text(spec["wait_for"]).first.wait_for(timeout=TIMEOUT_MS)
            if "click" in spec:
                page.get_by_text(spec["click"]).first.click()
                page.get_by_text(spec["then"]).first.wait_for(timeout=TIMEOUT_MS)
            page.screenshot(path=str(shots / f"{spec['name']}.png"), full_page=True)
            texts[spec["name"]] = page.inner_text("body")
        browser.close()
    json.dump(texts, sys.stdout)


if __name__ == "__main__":
    main()
