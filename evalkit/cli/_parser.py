"""The argument parser both command lines use: no prefix matching, and a suggestion for a
misspelt option, command or choice.

argparse accepts any unambiguous prefix of an option by default (``--typ=all`` would run
``--type=all``): a typo must never select a different run, so prefixes are refused.
"""

from __future__ import annotations

import argparse
import difflib
import re
from typing import Any, NoReturn

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class Parser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` with ``allow_abbrev=False`` and suggestions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        hint = self._suggestion(message)
        super().error(f"{message}{hint}")

    def _suggestion(self, message: str) -> str:
        if (choice := _INVALID_CHOICE.search(message)) is not None:
            choices = [c.strip().strip("'") for c in choice.group(2).split(",")]
            return _did_you_mean(choice.group(1), choices)
        if message.startswith("unrecognized arguments: "):
            options = sorted(_option_strings(self))
            for word in message.removeprefix("unrecognized arguments: ").split():
                if word.startswith("-") and (hint := _did_you_mean(word.split("=")[0],
                                                                   options)):
                    return hint
        return ""


def _did_you_mean(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option of ``parser`` and of its subcommands: argparse reports a subcommand's
    unknown options from the top-level parser."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _option_strings(sub)
    return found
