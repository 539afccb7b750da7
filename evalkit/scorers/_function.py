"""Your own scorer: a function of the eval script (``SCORER_<TYPE> = my_scorer``).

It is called as ``my_scorer(output, expected)`` for an output against ``expected_output``, and
as ``my_scorer(outputs)`` over the outputs of a repeatability entry or a bias group. A scorer
that names a parameter ``trace`` (``my_scorer(output, expected, trace)``) is given MLflow's
``Trace`` of the call by that name, and one that names ``traces`` (``my_scorer(outputs,
traces)``) the trace of each output's call, in the outputs' order. It returns
``True``/``False`` or a :class:`ScoreResult` (pass/fail with an optional score and rationale).
A scorer that raises or returns anything else scores that item 0 with the reason: it never
stops the run. The digest of its source is logged, so a changed scorer shows in the params.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.config import trace_parameter
from evalkit.scorers._base import Case, OutputGroup, ScorerVerdict


@dataclass(frozen=True)
class ScoreResult:
    """What a scorer function may return instead of a bool."""

    passed: bool
    score: float | None = None
    """Any number the scorer measured, recorded and reported beside the verdict."""
    rationale: str | None = None
    """Why, in a sentence: recorded and reported."""


class FunctionScorer:
    """Adapts a scorer function to the :class:`~evalkit.scorers.Scorer` interface."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.name = getattr(function, "__name__", type(function).__name__)
        try:
            source = inspect.getsource(function)
        except (OSError, TypeError):  # defined where no source file exists (a REPL)
            source = repr(function)
        self.digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
        self._trace = trace_parameter(function, comparative=False)
        self._traces = trace_parameter(function, comparative=True)
        self.reads_traces = bool(self._trace or self._traces)

    def against_expected(self, cases: Sequence[Case]) -> list[ScorerVerdict]:
        return [self._verdict(case.output, case.expected,
                              **({self._trace: case.trace} if self._trace else {}))
                for case in cases]

    def among_outputs(self, groups: Sequence[OutputGroup]) -> list[ScorerVerdict]:
        return [self._verdict(list(group.outputs),
                              **({self._traces: list(group.traces)} if self._traces else {}))
                for group in groups]

    def _verdict(self, *arguments: Any, **keywords: Any) -> ScorerVerdict:
        try:
            result = self.function(*arguments, **keywords)
        except Exception as err:  # the user's code: its failure is a result, not a crash
            return raised(self.name, err)
        return self._interpret(result)

    def _interpret(self, result: Any) -> ScorerVerdict:
        """The verdict a scorer function's return value gives."""
        if isinstance(result, bool):
            return ScorerVerdict(result)
        if isinstance(result, ScoreResult) and isinstance(result.passed, bool) \
                and (result.score is None or isinstance(result.score, int | float)) \
                and (result.rationale is None or isinstance(result.rationale, str)):
            return ScorerVerdict(result.passed, score=None if result.score is None
                           else float(result.score), rationale=result.rationale)
        return ScorerVerdict(False, error=f"scorer {self.name} returned {result!r}: return True, "
                                    "False or evalkit.ScoreResult(passed, score, rationale)")


def raised(name: str, err: Exception) -> ScorerVerdict:
    """A scorer's failure: the item scores 0, with the reason."""
    return ScorerVerdict(False, error=f"scorer {name} raised {type(err).__name__}: {err}")
