"""The OpenAI-compatible endpoint of `make test-adoption`'s first-week steps
(tests/support/openai_stub.py).

    python tools/adoption_stub.py COUNTS_FILE URL_FILE

Serves on a free loopback port until SIGTERM: the judge (model ``judge``) always answers 1; the
component (any other model) answers the capital of the country its user message names. Each
request appends its model to COUNTS_FILE, so the shell can count the component's calls made by
one command (a rescore must make none). The base URL is written to URL_FILE once serving.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.openai_stub import OpenAIStub, RecordedRequest, Reply, ok  # noqa: E402

JUDGE_MODEL = "judge"
CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Kenya": "Nairobi", "Peru": "Lima",
            "Canada": "Ottawa", "Egypt": "Cairo", "Norway": "Oslo", "India": "New Delhi"}


def main(counts_file: Path, url_file: Path) -> None:
    lock = threading.Lock()

    def answer(request: RecordedRequest) -> Reply:
        body = request.body or {}
        model = str(body.get("model"))
        with lock, counts_file.open("a", encoding="utf-8") as counts:
            counts.write(model + "\n")
        if model == JUDGE_MODEL:
            return ok("1")
        asked = str(body.get("messages", [{}])[-1].get("content", ""))
        return ok(next((city for country, city in CAPITALS.items() if country in asked), "?"))

    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with OpenAIStub(answer) as stub:
        url_file.write_text(stub.base_url, encoding="utf-8")
        stopped.wait()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
