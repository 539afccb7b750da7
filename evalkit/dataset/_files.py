"""The entry files under ``data/``: every ``*.json`` file, none dropped without a word.

A symlinked entry file is followed when its target is a regular file inside the dataset folder
(its id is the link's path, like any other file's). A link that dangles, loops, points outside
the dataset (that file is never read) or at a folder, a ``.json`` name that is not a regular
file (a pipe would block the read) or not UTF-8 (it could not be written as an id), are
violations. Symlinked folders are not walked: a link to an ancestor would loop, and one to a
sibling would list its entries twice under two ids.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from evalkit.dataset._violations import Collector

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_FIX_LINK = "replace the symlink with the entry file itself, or point it at a file in the dataset"


def entry_files(data_root: Path, dataset_root: Path,
                found: Collector) -> tuple[list[Path], list[Path]]:
    """(entry files, other files) under ``data_root``, each in path order."""
    inside = dataset_root.resolve()
    if not data_root.resolve().is_relative_to(inside):
        found.add(data_root, "", "a symlink to a folder outside the dataset folder (not read)",
                  "replace the symlink with the data folder itself")
        return [], []
    entries: list[Path] = []
    strays: list[Path] = []
    folders = [data_root]
    while folders:
        # scandir: the file type comes with the listing, so a regular file costs no stat call.
        with os.scandir(folders.pop()) as listing:
            items = sorted(listing, key=lambda item: item.name)
        for item in items:
            path = Path(item.path)
            if _follows_to_folder(item):
                if not item.is_symlink():
                    folders.append(path)
                    continue
                what = "an entry file" if item.name.endswith(".json") else "a folder of entries"
                found.add(path, "", f"a symlink to a folder, not followed for {what}",
                          "replace the symlink with a real folder, or link each entry file")
            elif item.name.endswith(".json"):
                if _LONE_SURROGATE.search(item.name):  # bytes that are not UTF-8, kept by Python
                    found.add(path, "", "the file name is not UTF-8, so it cannot be an entry id",
                              "rename the file with UTF-8 characters")
                elif _readable_entry(item, inside, found):
                    entries.append(path)
            elif not item.name.startswith(".") and _follows_to_file(item):
                strays.append(path)
    return sorted(entries), sorted(strays)


def _follows_to_folder(item: os.DirEntry[str]) -> bool:
    try:
        return item.is_dir()  # follows a symlink
    except OSError:  # a symlink loop
        return False


def _follows_to_file(item: os.DirEntry[str]) -> bool:
    try:
        return item.is_file()
    except OSError:
        return False


def _readable_entry(item: os.DirEntry[str], inside: Path, found: Collector) -> bool:
    path = Path(item.path)
    if item.is_symlink():
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
    if not _follows_to_file(item):
        found.add(path, "", "not a regular file (a pipe, socket or device)",
                  "replace it with a regular JSON file")
        return False
    return True
