"""An MLflow scorer as evalkit's (``SCORER_<TYPE> = my_mlflow_scorer``): a function decorated
with ``mlflow.genai.scorers.scorer`` (or any ``mlflow.genai.scorers.Scorer``), unchanged.

It is run as ``mlflow.genai.evaluate`` runs it (``Scorer.run``, which passes each parameter
the function names): ``inputs`` is the entry's input, ``outputs`` the output, ``expectations``
``{"expected_response": expected_output}`` (MLflow's name for the expected answer) and
``trace`` MLflow's ``Trace`` of the call. Its answer must be binary: ``True``/``False``,
``"yes"``/``"no"``, or a ``Feedback`` whose value is one of those (its rationale becomes the
item's). A ``Feedback`` carrying an error, any other value, or a scorer that raises scores the
item 0 with the reason. Its name is the scorer's; its digest that of its definition as MLflow
serialises it (name, signature and source), so a changed scorer shows in the params.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from typing import Any

from evalkit.scorers._base import Case, OutputGroup, ScorerVerdict
from evalkit.scorers._function import raised

EXPECTED_RESPONSE = "expected_response"
"""The key of the expected answer in an MLflow scorer's ``expectations``."""
_ANSWERS = {True: True, False: False, "yes": True, "no": False}


class MlflowScorer:
    """Adapts an MLflow scorer to the :class:`~evalkit.scorers.Scorer` interface."""

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer
        self.name: str = scorer.name
        self.digest = hashlib.sha256(_definition(scorer).encode("utf-8")).hexdigest()
        self.reads_traces = "trace" in inspect.signature(scorer.__call__).parameters

    def against_expected(self, cases: Sequence[Case]) -> list[ScorerVerdict]:
        return [self._verdict(case) for case in cases]

    def among_outputs(self, groups: Sequence[OutputGroup]) -> list[ScorerVerdict]:
        # The configuration refuses an MLflow scorer for repeatability and bias before any call.
        raise NotImplementedError("an MLflow scorer scores one output against its expectations")

    def _verdict(self, case: Case) -> ScorerVerdict:
        try:
            result = self.scorer.run(inputs=case.input, outputs=case.output,
                                     expectations={EXPECTED_RESPONSE: case.expected},
                                     trace=case.trace)
        except Exception as err:  # the user's code: its failure is a result, not a crash
            return raised(self.name, err)
        from mlflow.entities import Feedback

        if isinstance(result, Feedback):
            if result.error is not None:
                return ScorerVerdict(False, error=f"scorer {self.name} returned a Feedback with "
                                     f"an error: {result.error.error_message}")
            return self._answer(result.value, result.rationale)
        return self._answer(result, None)

    def _answer(self, value: Any, rationale: str | None) -> ScorerVerdict:
        key = value.lower() if isinstance(value, str) else value
        if not isinstance(key, bool | str) or key not in _ANSWERS:
            return ScorerVerdict(False, error=f"scorer {self.name} answered {value!r}: an "
                                 "evalkit verdict is binary, so answer True/False or 'yes'/'no' "
                                 "(alone or as a Feedback's value)")
        return ScorerVerdict(_ANSWERS[key], rationale=rationale)


def _definition(scorer: Any) -> str:
    """The scorer as MLflow serialises it, without the MLflow version (an upgrade changes no
    scorer); a subclass of ``Scorer``, which MLflow does not serialise, by its class's
    source, or by its repr where no source file exists (a REPL)."""
    from mlflow.exceptions import MlflowException

    try:
        dump = scorer.model_dump()
    except MlflowException:
        return inspect.getsource(type(scorer))
    except (OSError, TypeError):
        return repr(scorer)
    return json.dumps({k: v for k, v in dump.items() if k != "mlflow_version"},
                      sort_keys=True, default=str)
