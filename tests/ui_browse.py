"""Open pages of the MLflow UI in headless Chromium and print what they render (`make test-ui`).

Run by tests/test_ui.py with the Python of the cached UI venv (Playwright lives there, not in
evalkit's venv). Reads a JSON list of pages on stdin, each ``{"name", "url", "wait_for"}`` and
optionally ``"steps"``: ``[action, argument]`` pairs done in order once ``wait_for`` shows:

- ``["click", text]``: click the first element showing ``text``;
- ``["option", text]``: click the option (a menu's or a list's) showing ``text``;
- ``["key", key]``: press a key (``Escape`` closes a menu);
- ``["row", text]``: click the row of a table that shows ``text`` (opens a trace);
- ``["button", name]``: click the button whose accessible name starts with ``name``;
- ``["expand", css]``: click every element matching ``css`` (rows that unfold), in order;
- ``["wait", text]``: wait until ``text`` shows.

Prints ``{name: {"body": the page's visible text, "dialog": an open dialog's text (the trace
view) or "", "headers": the names of the table's columns}}`` as JSON and saves ``<name>.png`` in the
folder given as the only argument. Debian's chromium is driven through its executable path:
Playwright's own browser download needs the internet.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]
TIMEOUT_MS = 180_000  # the UI's first render on a loaded 2-core machine takes tens of seconds
ASSISTANT_CLOSE = '[data-component-id="mlflow.assistant.chat_panel.close"]'
"""MLflow 3.17's assistant panel opens beside every page and narrows the tables: closed."""


def step(page: Page, action: str, argument: str) -> None:
    if action == "click":
        page.get_by_text(argument).first.click()
    elif action == "option":
        page.get_by_role("option").filter(has_text=argument).first.click()
    elif action == "key":
        page.keyboard.press(argument)
    elif action == "row":
        # the first cell is a checkbox; any other cell opens the row's trace
        page.get_by_role("row").filter(has_text=argument).first.get_by_role("cell").nth(
            2).click()
    elif action == "button":
        page.get_by_role("button", name=re.compile("^" + re.escape(argument))).first.click()
    elif action == "expand":
        found = page.locator(argument)
        found.first.wait_for(timeout=TIMEOUT_MS)
        for index in range(found.count()):
            found.nth(index).click()
    elif action == "wait":
        page.get_by_text(argument).first.wait_for(timeout=TIMEOUT_MS)
    else:
        raise ValueError(f"unknown step {action!r}")


def main() -> None:
    shots = Path(sys.argv[1])
    shots.mkdir(parents=True, exist_ok=True)
    pages = json.load(sys.stdin)
    texts: dict[str, dict[str, Any]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1900, "height": 1100})
        page.set_default_timeout(TIMEOUT_MS)
        for spec in pages:
            page.goto(spec["url"], wait_until="domcontentloaded")
            page.get_by_text(spec["wait_for"]).first.wait_for(timeout=TIMEOUT_MS)
            if page.locator(ASSISTANT_CLOSE).count():
                page.locator(ASSISTANT_CLOSE).first.click()
            for action, argument in spec.get("steps", []):
                step(page, action, argument)
            page.wait_for_timeout(500)  # let the last click's render settle for the picture
            page.screenshot(path=str(shots / f"{spec['name']}.png"), full_page=True)
            dialog = page.get_by_role("dialog")
            texts[spec["name"]] = {
                "body": page.inner_text("body"),
                "dialog": dialog.first.inner_text() if dialog.count() else "",
                "headers": [h.strip().splitlines()[0]  # the name; a summary may follow
                            for h in page.get_by_role("columnheader").all_inner_texts()
                            if h.strip()]}
        browser.close()
    json.dump(texts, sys.stdout)


if __name__ == "__main__":
    main()
