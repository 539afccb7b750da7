"""Open pages of the MLflow UI in headless Chromium and print what they render (`make test-ui`).

Run by tests/e2e/test_ui.py with the Python of the cached UI venv (Playwright lives there, not in
evalkit's venv). Reads a JSON list of pages on stdin, each ``{"name", "url", "wait_for"}`` and
optionally ``"steps"``: ``[action, argument]`` pairs done in order once ``wait_for`` shows:

- ``["click", text]``: click the first element showing ``text``;
- ``["click-exact", text]``: click the first element whose whole text is ``text`` (a span in
  the trace tree, where ``click`` could find the request quoting its name);
- ``["option", text]``: click the option (a menu's or a list's) showing ``text``;
- ``["key", key]``: press a key (``Escape`` closes a menu);
- ``["row", text]``: click the row of a table that shows ``text`` (opens a trace);
- ``["button", name]``: click the button whose accessible name starts with ``name``;
- ``["last-button", name]``: the same, the last such button of the page (the compare view
  has a Columns button over its run list, then one over its traces);
- ``["expand", css]``: click every element matching ``css`` (rows that unfold), in order;
- ``["wait", text]``: wait until ``text`` shows;
- ``["picture", alt]``: wait until the image whose alt text is ``alt`` is drawn (the browser
  decoded it: it has a width);
- ``["show", text]``: scroll the first element showing exactly ``text`` into view (a column
  of a table wider than its pane, for the picture);
- ``["feedback", "NAME=VALUE"]``: add a feedback to the opened trace through the assessments
  pane's own form, as a person would (VALUE ``pass`` or ``fail``: the Boolean True or False),
  and wait until the pane counts it.

Prints ``{name: {"url": the address the page ended on, "body": the page's visible text,
"dialog": an open dialog's text (the trace view) or "", "headers": the names of the table's
columns, "columns": each column header's whole text (its name and any summary under it),
"pictures": ``{alt, width, height}`` of each image drawn}}`` as JSON and saves ``<name>.png`` in
the folder given as the only argument. Debian's chromium is driven through its executable path:
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
FEEDBACKS = re.compile(r"^Feedback \((\d+)\)$")
"""The assessments pane's header, which counts the trace's feedbacks (each, not each name)."""


def feedback_count(page: Page) -> int:
    header = page.get_by_text(FEEDBACKS)
    if not header.count():
        return 0
    found = FEEDBACKS.match(header.first.inner_text().strip())
    return int(found.group(1)) if found else 0


def add_feedback(page: Page, name: str, verdict: str) -> None:
    if verdict not in ("pass", "fail"):
        raise ValueError(f"feedback value {verdict!r}: pass or fail")
    add = page.get_by_role("button", name="Add feedback", exact=True)
    add.wait_for(timeout=TIMEOUT_MS)  # the pane is drawn, its header counted
    shown = feedback_count(page)
    add.click()
    page.get_by_placeholder("Enter a feedback name").fill(name)
    # picking the name from the typeahead closes its menu, which covers the data type
    page.get_by_test_id(f"assessment-name-typeahead-item-{name}").click()
    # a new name offers Boolean; one the trace holds switches the data type to that name's
    page.get_by_role("combobox", name="Data Type").click()
    page.get_by_role("option", name="String", exact=True).wait_for(timeout=TIMEOUT_MS)
    boolean = page.get_by_role("option", name="Boolean", exact=True)
    if boolean.count():
        boolean.click()
        page.locator('[data-component-id="shared.model-trace-explorer.'
                     'assessment-value-boolean-input"]').get_by_text(
            "True" if verdict == "pass" else "False", exact=True).click()
    else:
        page.get_by_role("option", name="String", exact=True).click()
        page.get_by_test_id("assessment-value-string-input").fill(verdict)
    with page.expect_response(lambda r: r.request.method == "POST"
                              and r.url.endswith("/assessments")) as created:
        page.get_by_role("button", name="Create", exact=True).click()
    if not created.value.ok:
        raise RuntimeError(f"feedback {name}={verdict}: {created.value.status} "
                           f"{created.value.text()[:500]}")
    # the pane shows it once the trace is read again
    page.get_by_text(f"Feedback ({shown + 1})", exact=True).wait_for(timeout=TIMEOUT_MS)


def step(page: Page, action: str, argument: str) -> None:
    if action in ("click", "click-exact"):
        page.get_by_text(argument, exact=action == "click-exact").first.click()
    elif action == "option":
        page.get_by_role("option").filter(has_text=argument).first.click()
    elif action == "key":
        page.keyboard.press(argument)
    elif action == "row":
        # the first cell is a checkbox; any other cell opens the row's trace
        page.get_by_role("row").filter(has_text=argument).first.get_by_role("cell").nth(
            2).click()
    elif action in ("button", "last-button"):
        found = page.get_by_role("button", name=re.compile("^" + re.escape(argument)))
        (found.first if action == "button" else found.last).click()
    elif action == "expand":
        found = page.locator(argument)
        found.first.wait_for(timeout=TIMEOUT_MS)
        for index in range(found.count()):
            found.nth(index).click()
    elif action == "wait":
        page.get_by_text(argument).first.wait_for(timeout=TIMEOUT_MS)
    elif action == "picture":
        page.wait_for_function(
            "alt => [...document.images].some(i => i.alt === alt && i.naturalWidth > 0)",
            arg=argument, timeout=TIMEOUT_MS)
    elif action == "show":
        page.get_by_text(argument, exact=True).first.scroll_into_view_if_needed()
    elif action == "feedback":
        name, _, verdict = argument.partition("=")
        add_feedback(page, name, verdict)
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
            columns = [h.strip() for h in page.get_by_role("columnheader").all_inner_texts()
                       if h.strip()]
            texts[spec["name"]] = {
                "url": page.url,
                "body": page.inner_text("body"),
                "dialog": dialog.first.inner_text() if dialog.count() else "",
                "headers": [h.splitlines()[0] for h in columns],  # a summary may follow
                "columns": columns,
                "pictures": page.evaluate(
                    "[...document.images].filter(i => i.naturalWidth > 0).map(i => "
                    "({alt: i.alt, width: i.naturalWidth, height: i.naturalHeight}))")}
        browser.close()
    json.dump(texts, sys.stdout)


if __name__ == "__main__":
    main()
