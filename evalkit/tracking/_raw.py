"""The raw-results file of a run: one JSON line per call, appended as each call finishes.

A process killed mid-write (SIGKILL, a full disk) can leave the last line torn. Reading
tolerates exactly that: the torn line is dropped (its call is made again by ``--resume``) and
the file is repaired before anything is appended to it. A damaged line anywhere else is not
a kill's trace, and is refused naming the file and line (:class:`RawResultsDamaged`; what
fixes it depends on who reads: a resume makes the line's call again, a rescore cannot).

One process at a time works on a run: :func:`lock_run` holds an exclusive lock on the run's
folder (``filelock``: ``flock`` on POSIX), so a second ``--resume`` of the same run is refused
instead of making the missing calls twice. The kernel releases the lock when its process
dies, so a killed run never leaves a stale lock behind.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from filelock import FileLock, Timeout

from evalkit._errors import ConfigError, EvalkitError, RawResultsDamaged
from evalkit.records import CallRecord

LOCK_FILE = "run.lock"


@dataclass(frozen=True)
class RawResults:
    """The calls a raw-results file holds, and the torn last line dropped, if any."""

    records: list[CallRecord]
    torn: str | None = None
    """The start of a last line cut mid-write (its call was not kept)."""


def read_raw_results(path: Path) -> RawResults:
    """Every call recorded in a raw-results file, in the order written."""
    try:
        return parse_raw_results(path.read_bytes(), str(path))
    except RawResultsDamaged as damaged:  # a file of this machine's, being resumed
        raise EvalkitError(f"{damaged}. Remove the line (its call will be made again) and "
                           "resume") from None


def parse_raw_results(content: bytes, source: str) -> RawResults:
    """Every call a raw-results file's ``content`` holds (read from ``source``, named in an
    error); :class:`RawResultsDamaged` for a damaged line before the last."""
    lines = content.split(b"\n")
    ends_cleanly = lines[-1] == b""
    if ends_cleanly:
        lines.pop()
    records: list[CallRecord] = []
    for number, line in enumerate(lines, 1):
        try:
            records.append(CallRecord.from_json(json.loads(line.decode("utf-8"))))
        except (ValueError, TypeError, KeyError) as err:
            if number == len(lines) and not ends_cleanly:
                return RawResults(records, line[:80].decode("utf-8", "replace"))
            raise RawResultsDamaged(source, number, str(err)) from None
    return RawResults(records)


def repair_raw_results(path: Path) -> RawResults:
    """Read the file and, if its last line is torn or unterminated, rewrite it whole so that
    appending goes on after the last complete call."""
    raw = read_raw_results(path)
    if raw.torn is not None or not path.read_bytes().endswith(b"\n"):
        write_atomically(path, raw.records)
    return raw


def write_atomically(path: Path, records: list[CallRecord]) -> None:
    """Replace the file with ``records``; a crash leaves the old file whole."""
    scratch = path.with_suffix(".rewrite")
    scratch.write_text("".join(_line(r) for r in records), encoding="utf-8")
    os.replace(scratch, path)


def _line(record: CallRecord) -> str:
    return json.dumps(record.to_json(), ensure_ascii=False) + "\n"


class RawResultsLog:
    """Append-only JSON-lines file of every call, one flushed line at a time; put back in
    dataset order once the calls stop."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def append(self, record: CallRecord) -> None:
        line = _line(record)
        with self._lock:
            self._file.write(line)
            # Flushed to the OS per line: a killed process keeps every completed call.
            self._file.flush()

    def put_in_order(self, order: Mapping[str, int]) -> None:
        """Rewrite the file sorted by (entry position, repeat); calls finish out of order when
        several are in flight."""
        with self._lock:
            self._file.close()
            records = read_raw_results(self.path).records
            records.sort(key=lambda r: (order.get(r.entry_id, len(order)), r.repeat))
            write_atomically(self.path, records)
            self._file = self.path.open("a", encoding="utf-8")

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RawResultsLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def lock_run(run_dir: Path, run_id: str) -> FileLock:
    """Take the run's lock for this process (released with ``release()``, or by the kernel
    when the process dies); refuse if another process holds it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(run_dir / LOCK_FILE, blocking=False)
    try:
        lock.acquire()
    except Timeout:
        raise ConfigError(f"run {run_id} is being worked on by another process (an "
                          f"evaluation or a --resume of it holds {run_dir / LOCK_FILE}): "
                          "wait for it to end, then resume again if the run is not "
                          "finished") from None
    return lock


@dataclass
class RunFiles:
    """A run's raw results on local disk, and the lock this process holds on them."""

    raw: RawResultsLog
    lock: FileLock
    recorded: Mapping[tuple[str, int], CallRecord]
    """Calls an earlier, interrupted attempt at the run recorded (entry id, repeat)."""
