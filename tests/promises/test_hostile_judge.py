"""The judge endpoint's preflight under a misbehaving provider, over real HTTP
(tests/support/openai_stub).

Transient failures (429 with Retry-After, 5xx, a reply slower than the timeout) are retried
within a small bound; permanent ones fail at once; a provider message quoting the key is
redacted before anyone sees it.
"""

from __future__ import annotations

import uuid

import pytest

from evalkit import ProviderError
from evalkit._errors import ConfigError
from evalkit.scorers import ChatEndpoint
from evalkit.scorers._endpoint import PREFLIGHT_RETRY
from tests.support.openai_stub import OpenAIStub, error_body, ok, rate_limited, status, timeout


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    value = "sk-hostile-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", value)
    return value


@pytest.mark.parametrize("transient", [
    [rate_limited(1)],
    [status(500), status(503)],
    [timeout(6.0)],  # longer than the preflight's 5-second timeout
], ids=["429-retry-after-1", "500-then-503", "timeout"])
def test_preflight_rides_out_transient_failures(key: str, transient: list) -> None:
    with OpenAIStub([*transient, ok("1")]) as stub:
        ChatEndpoint("m", base_url=stub.base_url).preflight()
        assert len(stub.chat_requests()) == len(transient) + 1


def test_preflight_gives_up_on_a_provider_that_keeps_failing(key: str) -> None:
    with OpenAIStub(lambda request: status(503)) as stub:
        with pytest.raises(ProviderError, match="kept answering InternalServerError 503"):
            ChatEndpoint("m", base_url=stub.base_url).preflight()
        assert len(stub.chat_requests()) == PREFLIGHT_RETRY.max_attempts


@pytest.mark.parametrize("code", [400, 401, 403, 404])
def test_preflight_fails_at_once_on_a_permanent_error(key: str, code: int) -> None:
    with OpenAIStub(lambda request: status(code)) as stub:
        with pytest.raises(ConfigError, match=f"refused the request: .*{code}"):
            ChatEndpoint("m", base_url=stub.base_url).preflight()
        assert len(stub.chat_requests()) == 1


def test_a_401_quoting_the_key_is_redacted(key: str) -> None:
    body = error_body(401, f"Incorrect API key provided: {key}. Find your key at ...")
    with OpenAIStub(lambda request: status(401, body=body)) as stub, \
            pytest.raises(ConfigError) as refused:
        ChatEndpoint("m", base_url=stub.base_url).preflight()
    message = str(refused.value)
    assert key not in message
    assert key[:12] not in message  # not even a cut-off prefix
    assert "[REDACTED:OPENAI_API_KEY]" in message


def test_a_key_given_in_code_is_redacted_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    given = "sk-given-" + uuid.uuid4().hex
    body = error_body(403, f"key {given} is not allowed")
    with OpenAIStub(lambda request: status(403, body=body)) as stub, \
            pytest.raises(ConfigError) as refused:
        ChatEndpoint("m", base_url=stub.base_url, api_key=given).preflight()
    assert given not in str(refused.value)
    assert "[REDACTED:api_key]" in str(refused.value)
