"""The calls a rescore reuses: the source run's raw-results artifact, every call its plan needs,
each exactly once, or a refusal that says what is wrong with the file and what fixes it.

A run records each call once, and a finished run uploads its raw results whole: a finished
run's artifact with a line cut off, a damaged line, a call recorded twice or a call missing was
damaged after the fact. Resuming cannot help (a finished run is not resumed), and a rescore
never guesses: it neither drops a lost call nor picks one of two records of a call (either
would move the new run's numbers without a word). What does help is putting the whole file
back (the machine that made the run keeps it under ``.evalkit/runs/``), or evaluating again.
An unfinished run (killed, failed) missing calls is resumed first: the resume makes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalkit._errors import ConfigError, EvalkitError, RawResultsDamaged, TrackingError
from evalkit.calls import RunPlan
from evalkit.records import CallRecord, names
from evalkit.tracking import (
    RawResults,
    RunReader,
    StoredRun,
    read_raw_results,
    resume_commands,
)

CallKey = tuple[str, int]
"""A call: its entry id and repeat."""


def recorded_calls(reader: RunReader, source: StoredRun, plan: RunPlan, *, local: Path,
                   tracking_uri: str, script: str) -> Sequence[CallRecord]:
    """Every call ``plan`` needs, as ``source`` recorded it, in the plan's order; ``local``:
    where this machine would keep the source's raw results (named in the fix if whole)."""
    run_id = source.run_id
    planned = [(p.entry.id, repeat) for p in plan.items for repeat in range(p.calls)]
    try:
        raw = reader.raw_results(run_id)
    except RawResultsDamaged as damaged:
        raise _damaged(source, f"line {damaged.line} is not a call record ({damaged.reason})",
                       plan, planned, local, tracking_uri, script) from None
    except TrackingError as err:
        raise ConfigError(f"{err}: there are no recorded outputs to rescore (a run uploads "
                          "its raw results when it ends)") from None
    finished = source.status == "FINISHED"
    damage = _damage(raw, planned, finished=finished)
    if damage is not None:
        raise _damaged(source, damage, plan, planned, local, tracking_uri, script)
    recorded = {(c.entry_id, c.repeat): c for c in raw.records}
    missing = [key for key in planned if key not in recorded]
    if missing:  # an unfinished run: its resume makes the missing calls
        entry_id, repeat = missing[0]
        raise ConfigError(f"run {run_id} did not finish ({source.status}): it recorded "
                          f"{len(planned) - len(missing)} of the {len(planned)} calls its "
                          f"selection needs ({entry_id!r} repeat {repeat} is missing). Resume "
                          f"it first ({resume_commands(run_id, script)}), then rescore it")
    unplanned = sorted(recorded.keys() - set(planned))
    if unplanned:
        raise ConfigError(f"run {run_id} recorded calls its selection does not plan now "
                          f"({unplanned[0][0]!r} repeat {unplanned[0][1]}): its outputs "
                          "cannot be matched to this script's entries")
    return [recorded[key] for key in planned]


def _damage(raw: RawResults, planned: Sequence[CallKey], *, finished: bool) -> str | None:
    """What is wrong with raw results that no resume explains, or None: a call recorded twice
    and, for a finished run (which uploaded them whole), a line cut off or a call missing."""
    first_line: dict[CallKey, int] = {}
    for line, record in enumerate(raw.records, start=1):
        key = (record.entry_id, record.repeat)
        first = first_line.setdefault(key, line)
        if first != line:
            same = raw.records[first - 1] == record
            return (f"line {line} records {key[0]!r} repeat {key[1]} again (line {first} "
                    f"has it{'' if same else ', with another outcome'}); a run records each "
                    "call once")
    if not finished:
        return None
    if raw.torn is not None:
        return (f"its last line (line {len(raw.records) + 1}) is cut off mid-record "
                f"({raw.torn[:40]!r}...)")
    missing = [key for key in planned if key not in first_line]
    if missing:
        return (f"{len(missing)} of the {len(planned)} calls its selection needs are not in "
                f"it ({missing[0][0]!r} repeat {missing[0][1]} first)")
    return None


def _damaged(source: StoredRun, damage: str, plan: RunPlan, planned: Sequence[CallKey],
             local: Path, tracking_uri: str, script: str) -> ConfigError:
    """The refusal of damaged raw results, with the fixes that work for this run."""
    run_id = source.run_id
    artifact = names.RAW_RESULTS_ARTIFACT
    again = f"evaluate again: python {script} {plan.selection.arguments()}"
    if source.status != "FINISHED":
        fix = (f"Resume it on the machine that made it (evalkit resume {run_id}): the resume "
               f"reads that machine's own copy (.evalkit/runs/{run_id}/"
               f"{names.RAW_RESULTS_FILE}) and uploads it whole; or {again}")
    elif _whole(local, planned):
        fix = (f"This machine kept them whole in {local}: put that file back "
               f"({_put_back(run_id, local)}, with MLFLOW_TRACKING_URI={tracking_uri}) and "
               f"rescore again, or {again}")
    else:
        fix = (f"Put back the whole file from the machine that made the run (its "
               f".evalkit/runs/{run_id}/{names.RAW_RESULTS_FILE}: {_put_back(run_id, 'FILE')}), "
               f"or {again}")
    why = ("The run finished, so resuming cannot make a call again, and a rescore"
           if source.status == "FINISHED" else "A rescore")
    return ConfigError(f"run {run_id}'s raw results ({artifact}) are damaged: {damage}. {why} "
                       f"scores every call as the run recorded it and guesses none. {fix}")


def _put_back(run_id: str, file: Path | str) -> str:
    """The command that logs ``file`` as the run's raw results again."""
    return (f"mlflow artifacts log-artifact --run-id {run_id} --artifact-path "
            f"{names.RAW_ARTIFACT_DIR} --local-file {file}")


def _whole(path: Path, planned: Sequence[CallKey]) -> bool:
    """Whether the raw-results file at ``path`` holds every planned call, each once, whole."""
    try:
        raw = read_raw_results(path)
    except (OSError, EvalkitError):
        return False
    return _damage(raw, planned, finished=True) is None
