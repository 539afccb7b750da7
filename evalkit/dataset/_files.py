"""The entry files under ``data/``: every ``*.json`` file, none dropped without a word.

A symlinked entry file is followed when its target is a regular file inside the dataset folder
(its id is the link's path, like any other file's). A link that dangles, loops, points outside
the dataset (that file is never read) or at a folder, and a ``.json`` name that is not a regular
file (a pipe would block the read), are violations. Symlinked folders are not walked: a link to
an ancestor would loop, and one to a sibling would list its entries twice under two ids.
"""

from __future__ import annotations

import os
from pathlib import Path

from evalkit.dataset._violations import Collector

_FIX_LINK = "replace the symlink with the entry file itself, or point it at a file in the dataset"


def entry_files(data_root: Path, dataset_root: Path,
                found: Collector) -> tuple[list[Path], list[Path]]:
    """(entry files, other files) under ``data_root``, each in path order."""
    inside = dataset_root.resolve()
    entries: list[Path] = []
    strays: list[Path] = []
    for folder, dirs, names in os.walk(data_root):  # does not descend into symlinked folders
        for name in sorted(dirs):
            link = Path(folder, name)
            if link.is_symlink():
                what = "an entry file" if name.endswith(".json") else "a folder of entries"
                found.add(link, "", f"a symlink to a folder, not followed for {what}",
                          "replace the symlink with a real folder, or link each entry file")
        for name in names:
            path = Path(folder, name)
            if not name.endswith(".json"):
                if path.is_file() and not name.startswith("."):
                    strays.append(path)
            elif _readable_entry(path, inside, found):
                entries.append(path)
    return sorted(entries), sorted(strays)


def _readable_entry(path: Path, inside: Path, found: Collector) -> bool:
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except FileNotFoundError:
            found.add(path, "", f"dangling symlink to {os.readlink(path)!r}", _FIX_LINK)
            return False
        except (OSError, RuntimeError):  # a loop: RuntimeError up to Python 3.12, then OSError
            found.add(path, "", "symlink loop: the link never reaches a file", _FIX_LINK)
            return False
        if not target.is_relative_to(inside):
            found.add(path, "", "symlink to a file outside the dataset folder (not read)",
                      "copy the file into the dataset instead of linking to it")
            return False
    if not path.is_file():
        found.add(path, "", "not a regular file (a pipe, socket or device)",
                  "replace it with a regular JSON file")
        return False
    return True
