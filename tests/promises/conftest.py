"""Fixtures of the process-level promises: a server that accepts connections and never
answers, for lint's schema fetches and for every command's tracking server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.servers import SilentServer


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()
