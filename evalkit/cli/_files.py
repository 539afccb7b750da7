"""A command's output files written all or none: a destination that cannot be written is
refused naming it, before any file is in place, and leaves no folder or file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalkit._errors import ConfigError


@dataclass(frozen=True)
class OutputFile:
    kind: str
    """What it is, as the command lists it: ``report``, ``json``, ``chart``."""
    path: Path
    content: bytes
    option: str
    """The option that chose the path (named in the fix when it cannot be written)."""


def write_all(files: Sequence[OutputFile]) -> None:
    """Write every file or none. Each is first written in full beside its destination under a
    scratch name; only once all are written are they moved into place (a rename, which does
    not fail halfway). Any failure before that removes what was made and raises
    :class:`ConfigError` naming the destination and its option."""
    made: list[Path] = []  # folders this call created, outermost first
    scratch: list[tuple[Path, Path]] = []
    current = files[0] if files else None
    try:
        for current in files:
            if current.path.is_dir():
                raise IsADirectoryError(21, "it is a folder", str(current.path))
            _make_folder(current.path.parent, made)
        for current in files:
            handle, name = tempfile.mkstemp(prefix=f".{current.path.name}.", suffix=".partial",
                                            dir=current.path.parent)
            scratch.append((Path(name), current.path))
            with os.fdopen(handle, "wb") as out:
                out.write(current.content)
    except OSError as err:
        for written, _ in scratch:
            written.unlink(missing_ok=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):  # the refusal below is what matters
                folder.rmdir()
        assert current is not None
        raise ConfigError(f"cannot write {current.path} ({err.strerror or err}); nothing was "
                          f"written: give {current.option} a path you can write") from None
    for written, path in scratch:
        os.replace(written, path)


def _make_folder(folder: Path, made: list[Path]) -> None:
    """Create ``folder`` and any missing parents, adding each to ``made`` as it is created."""
    for missing in [f for f in (folder, *folder.parents) if not f.exists()][::-1]:
        missing.mkdir()
        made.append(missing)
