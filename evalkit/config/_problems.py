"""Every problem with the constants, collected before one :class:`ConfigError` is raised, so
a user fixes them all in one round trip instead of one per run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from evalkit._errors import ConfigError

T = TypeVar("T")


class Problems:
    """Runs checks, keeping each one's :class:`ConfigError` instead of stopping at the first."""

    def __init__(self, script: str) -> None:
        self.script = script
        self.messages: list[str] = []

    def check(self, check: Callable[..., T], *args: Any, default: Any = None) -> T:
        """``check(*args)``, or ``default`` after recording the error it raised."""
        try:
            return check(*args)
        except ConfigError as err:
            self.messages.append(str(err))
            return default  # type: ignore[no-any-return]

    def add(self, message: str) -> None:
        self.messages.append(f"{self.script}: {message}")

    def raise_any(self) -> None:
        """Raise one error naming every problem found, each with its fix."""
        if len(self.messages) == 1:
            raise ConfigError(self.messages[0])
        if self.messages:
            prefix = f"{self.script}: "
            raise ConfigError(
                f"{self.script}: {len(self.messages)} problems with the constants, each with "
                "its fix:\n" + "\n".join(f"  - {m.removeprefix(prefix)}"
                                          for m in self.messages))
