"""People's labels on entries: what a person said an entry's output deserves, per test type.

A label is MLflow feedback on the entry's trace, source ``HUMAN``, named ``<type>_label``
(:attr:`evalkit.records.TypeNames.label`: never the name of the scorer's own verdict, which
MLflow's traces table would count together with it), with a pass or fail value. People give
them in the MLflow UI, in ``evalkit label`` or from a file (``evalkit label --from``).

Runs labelled before labels had a name of their own hold them as HUMAN feedback named for
the test type itself; they are read as labels too, so an old run keeps its corrected accuracy.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.records import names
from evalkit.records.names import TypeNames

PASS_VALUES = frozenset({"pass", "passed", "true", "yes", "1"})
FAIL_VALUES = frozenset({"fail", "failed", "false", "no", "0"})
"""How a label's value may be spelt (any case); booleans and the numbers 1 and 0 too."""


def label_verdict(value: Any) -> bool | None:
    """True for a pass, False for a fail, None for a value that is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in PASS_VALUES:
            return True
        if word in FAIL_VALUES:
            return False
    return None


@dataclass(frozen=True)
class ReviewerVerdict:
    """Feedback a person added to an entry's trace in the MLflow UI (source HUMAN)."""

    entry_id: str
    reviewer: str
    time_ms: int
    name: str
    value: Any
    comment: str | None


@dataclass(frozen=True)
class HumanLabel:
    """One person's verdict on one entry of one test type."""

    entry_id: str
    test_type: str
    passed: bool
    reviewer: str
    time_ms: int = 0
    comment: str | None = None


def label_names(types: Collection[str]) -> dict[str, str]:
    """Feedback name -> the test type a label of that name is for: ``<type>_label``, and the
    type itself, as runs labelled before labels had a name of their own hold them."""
    return {TypeNames.of(t).label: t for t in types} | {t: t for t in types}


def labels_in(feedback: Sequence[ReviewerVerdict],
              types: Collection[str]) -> tuple[HumanLabel, ...]:
    """The labels among people's feedback on a run's traces: named ``<type>_label`` for one
    of its test types (or, as before labels had a name of their own, the type itself), with
    a pass or fail value (other feedback, such as ``human_review`` notes, is not a label)."""
    labelled = label_names(types)
    return tuple(
        HumanLabel(v.entry_id, labelled[v.name], verdict, v.reviewer, v.time_ms, v.comment)
        for v in feedback
        if v.name in labelled and (verdict := label_verdict(v.value)) is not None)


def review_verdicts(feedback: Sequence[ReviewerVerdict]
                    ) -> Mapping[str, tuple[bool, ReviewerVerdict]]:
    """entry id -> its reviewer's verdict (pass True) and the feedback giving it: the latest
    ``human_review`` feedback with a pass or fail value (``feedback`` is in time order)."""
    return {v.entry_id: (verdict, v) for v in feedback if v.name == names.REVIEW_ASSESSMENT
            and (verdict := label_verdict(v.value)) is not None}
