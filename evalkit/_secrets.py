"""Keeping secrets out of everything evalkit writes.

Secrets reach a run through the environment (API keys, tokens). A component's output or error
message can echo one back (a provider error quoting a header, a debug print), so every text
that leaves the loop passes through :class:`Redactor` before it is stored anywhere: the raw
results file, MLflow params, tags and artifacts, and the reports.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
MIN_SECRET_LENGTH = 4
"""Shorter values are not redacted: replacing "1" or "abc" wherever it occurs would rewrite
ordinary text in every output, and a value that short is guessed in under a million tries
anyway (95 printable characters cubed)."""
FLAG_VALUES = frozenset({"true", "false", "none", "null", "enabled", "disabled"})
"""Values that switch a setting rather than guard anything (``TOKENIZERS_PARALLELISM=false``
has TOKEN in its name); redacting them would rewrite those words in every output."""


@dataclass(frozen=True)
class Redactor:
    """Replaces the values of secret-looking environment variables with ``[REDACTED:NAME]``:
    every value of at least :data:`MIN_SECRET_LENGTH` characters that is not a flag word."""

    secrets: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        environ = os.environ if environ is None else environ
        found = {(name, value) for name, value in environ.items()
                 if _SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH
                 and value.lower() not in FLAG_VALUES}
        # Longest first, so a secret containing another is replaced whole.
        return cls(tuple(sorted(found, key=lambda item: (-len(item[1]), item[0]))))

    def text(self, value: str) -> str:
        for name, secret in self.secrets:
            if secret in value:
                value = value.replace(secret, f"[REDACTED:{name}]")
        return value

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON value (keys included)."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        return value
