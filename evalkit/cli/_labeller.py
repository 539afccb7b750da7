"""The interactive screen of ``evalkit label``: a run's entries one at a time, each given a pass or
fail label with a single key press (:func:`label_cases`, keys from :func:`terminal_keys`).

The person sees what the judge saw (the input, the output or outputs, ``expected_output``, the
judge's rubric) and never the judge's verdict, so the label is their own and not an echo of the
judge's. The rubric (the judge's whole prompt, the same for every entry of a type) is shown in
full on the first screen and again when it changes or on ``r``; other screens show only what
is the entry's own, with a line saying where the rubric is. Each label goes to ``write`` as
soon as its key is pressed, before the next screen, so quitting at any point loses nothing, and
the next session starts at the first entry still without a label. Screens are plain lines (no
cursor movement, no full-screen mode): the same in a terminal, a pipe and a test, and the
person can scroll back.

All the text shown comes from the dataset or the component and is untrusted: control characters
are shown as visible ``\\xNN`` escapes, so an output cannot drive the terminal or hide text.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

KEY_LINE = "[p] pass  [f] fail  [s] skip  [b] back  [r] rubric  [q] quit"
_QUIT_KEYS = frozenset({"q", "\x1b", "\x03", "\x04"})
"""q, Escape, Ctrl-C and Ctrl-D (a terminal sends the last two as characters while
:func:`terminal_keys` reads, since it turns signals off)."""
_SECTION_LINES = 20
"""The most lines a section shows; a longer value ends with a note of how many were left out."""
_INDENT = "  "
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""Control characters but tab and newline (a lone carriage return rewrites the line it ends),
and the line separators and bidirectional overrides that reorder or split what is displayed."""


@dataclass(frozen=True)
class LabelCase:
    """One entry as the person labels it: what the judge saw, never what it decided."""

    entry_id: str
    test_type: str
    input: Any
    """A JSON value: a string is shown as it is, anything else as indented JSON."""
    outputs: tuple[Any, ...]
    """The component's output, or its outputs when a repeatability run called it several times."""
    expected: Any
    """``expected_output``; ``None`` when the entry has none."""
    rubric: str | None
    """What the judge was asked (its prompt or criteria); ``None`` when there is none."""
    label: bool | None
    """The label this reviewer already gave (``True``: pass); ``None`` when none yet."""


@dataclass(frozen=True)
class LabellingOutcome:
    """What one session of :func:`label_cases` did."""

    labelled: int
    """Entries given a label in this session (an entry whose label was changed counts once)."""
    skipped: int
    """Entries skipped in this session that are still without a label."""
    quit: bool
    """The person quit (q, Escape, Ctrl-C, Ctrl-D or the end of the keys); ``False``: the
    session went past the last entry without a label."""


def label_cases(cases: Sequence[LabelCase], write: Callable[[LabelCase, bool], None],
                keys: Iterator[str], out: TextIO, width: int = 80) -> LabellingOutcome:
    """Show ``cases`` to ``out``, at most ``width`` columns wide, one at a time from the first
    without a label, and hand each label to ``write`` as soon as its key is read from ``keys``.

    Pass, fail and skip move on to the next entry without a label (those labelled before need
    no second look), back to the entry just before, whatever its label; an entry's label, also
    one given earlier in this session, is shown so it can be changed. An exception of ``write``
    propagates, and every label before it is already written.
    """
    labels = [case.label for case in cases]
    position = _next_unlabelled(labels, 0)
    if position is None:
        _say(out, width, f"all {len(cases)} entries already have your label: nothing to do")
        return LabellingOutcome(labelled=0, skipped=0, quit=False)
    labelled: set[int] = set()
    skipped: set[int] = set()
    quit_before_end = True
    screen = _Screen(out, width, cases, labels)
    screen.show(position)
    for key in keys:
        choice = key.lower()
        if choice in _QUIT_KEYS:
            break
        if choice == "b":
            if position == 0:
                _say(out, width, "this is the first entry: there is none before it")
            else:
                position -= 1
                screen.show(position)
            continue
        if choice == "r":
            screen.show(position, rubric_in_full=True)
            continue
        if choice not in ("p", "f", "s"):
            _say(out, width, f"unknown key {key!r}: press p, f, s, b, r or q")
            continue
        if choice == "s":
            skipped.add(position)
        else:
            write(cases[position], choice == "p")
            labels[position] = choice == "p"
            labelled.add(position)
        following = _next_unlabelled(labels, position + 1)
        if following is None:
            quit_before_end = False
            break
        position = following
        screen.show(position)
    still_skipped = sum(1 for index in skipped if labels[index] is None)
    have_label = sum(1 for label in labels if label is not None)
    _say(out, width, f"labelled {len(labelled)}, skipped {still_skipped}; "
                     f"{have_label} of {len(cases)} entries have a label")
    return LabellingOutcome(labelled=len(labelled), skipped=still_skipped, quit=quit_before_end)


def terminal_keys(stream: TextIO) -> Iterator[str]:
    """Key presses from ``stream``. On a terminal, each key as it is pressed, without Enter (an
    arrow's or function key's escape sequence is one key); otherwise (a pipe, a file, or Windows,
    which has no ``termios``) the first character of each non-blank line, so
    ``printf 'p\\nf\\nq\\n' | evalkit label RUN_ID`` works."""
    if not stream.isatty() or os.name != "posix":
        yield from (line.strip()[0] for line in stream if line.strip())
        return
    fd = stream.fileno()
    decoder = codecs.getincrementaldecoder(stream.encoding or "utf-8")(errors="replace")
    while chunk := _pressed(fd):
        text = decoder.decode(chunk)
        if text.startswith("\x1b") and len(text) > 1:
            yield text
        else:
            yield from text


def _pressed(fd: int) -> bytes:
    """The bytes of the next key press (or of the keys typed since the last read) on the
    terminal ``fd``, read without echo, line editing or signals; ``b""`` once it hangs up.

    The terminal's own settings are back before this returns, so no way of abandoning the keys
    (a quit, an exception of ``write``) leaves it changed. ``tty.setcbreak`` would keep signals
    (Ctrl-C would end the screen with a traceback, not quit it) and throw away the keys typed
    while a label was being written."""
    import termios  # POSIX only: imported here so evalkit still imports on Windows
    import tty

    saved = termios.tcgetattr(fd)
    reading = termios.tcgetattr(fd)
    reading[tty.LFLAG] &= ~(termios.ECHO | termios.ICANON | termios.ISIG)
    reading[tty.CC][termios.VMIN] = 1
    reading[tty.CC][termios.VTIME] = 0
    try:
        termios.tcsetattr(fd, termios.TCSANOW, reading)
        return os.read(fd, 32)
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def _next_unlabelled(labels: Sequence[bool | None], start: int) -> int | None:
    return next((index for index in range(start, len(labels)) if labels[index] is None), None)


RUBRIC_SHOWN = "rubric: as shown above, the same for this entry (press r to see it again)"


class _Screen:
    """The screens of one session, which remember the rubric last shown in full."""

    def __init__(self, out: TextIO, width: int, cases: Sequence[LabelCase],
                 labels: Sequence[bool | None]) -> None:
        self._out = out
        self._width = width
        self._cases = cases
        self._labels = labels
        self._rubric_shown: str | None = None

    def show(self, position: int, rubric_in_full: bool = False) -> None:
        """The screen of ``cases[position]``: a header, its sections, its rubric (in full
        when asked or not shown in full before, else a line pointing to it), its label if it
        has one, and the keys."""
        case = self._cases[position]
        labels = self._labels
        width = self._width
        have_label = sum(1 for label in labels if label is not None)
        lines = ["", "─" * width, *_wrapped(
            f"entry {case.entry_id} · {case.test_type} · {position + 1} of {len(self._cases)} "
            f"({have_label} labelled)", width, "")]
        for title, value in _sections(case):
            lines += [title, *_body(value, width)]
        if case.rubric is not None:
            if rubric_in_full or case.rubric != self._rubric_shown:
                lines += ["rubric", *_body(case.rubric, width, limit=None)]
                self._rubric_shown = case.rubric
            else:
                lines += _wrapped(RUBRIC_SHOWN, width, "")
        if labels[position] is not None:
            lines.append(f"your label: {'pass' if labels[position] else 'fail'}")
        lines += _wrapped(KEY_LINE, width, "")
        print("\n".join(lines), file=self._out, flush=True)


def _sections(case: LabelCase) -> Iterator[tuple[str, Any]]:
    """The entry's own sections (the rubric, shared by the entries, is not one of them)."""
    yield "input", case.input
    if len(case.outputs) == 1:
        yield "output", case.outputs[0]
    else:
        for number, output in enumerate(case.outputs, start=1):
            yield f"output {number} of {len(case.outputs)}", output
    if case.expected is not None:
        yield "expected_output", case.expected


def _body(value: Any, width: int, limit: int | None = _SECTION_LINES) -> list[str]:
    """A section's value, indented, wrapped and shortened to at most ``limit`` lines (the
    rubric, shown once, is shown whole: ``None``)."""
    # A blank string is quoted, or an empty output would look like a missing section.
    text = value if isinstance(value, str) and value.strip() else json.dumps(
        value, ensure_ascii=False, indent=2)
    lines = [wrapped for line in text.replace("\r\n", "\n").split("\n")
             for wrapped in _wrapped(line, width, _INDENT)]
    if limit is None or len(lines) <= limit:
        return lines
    shown = limit - 1
    return [*lines[:shown],
            *_wrapped(f"… {len(lines) - shown} more lines left out", width, _INDENT)]


def _wrapped(text: str, width: int, indent: str) -> list[str]:
    """``text`` with its unsafe characters escaped, as lines of at most ``width`` columns that
    start with ``indent`` (a blank line stays one). Continued lines hang two columns deeper than
    the text's own start, so the line breaks of a value stay visible among those of the screen."""
    visible = _UNSAFE.sub(lambda match: _escaped(ord(match.group())), text)
    own_indent = len(visible) - len(visible.lstrip(" "))
    hanging = indent + " " * min(own_indent + 2, width // 4)
    return textwrap.wrap(visible, width, initial_indent=indent, subsequent_indent=hanging,
                         break_on_hyphens=False) or [""]


def _escaped(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _say(out: TextIO, width: int, message: str) -> None:
    print("\n".join(_wrapped(message, width, "")), file=out, flush=True)
