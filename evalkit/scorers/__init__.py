"""Scoring methods behind one interface (:class:`Scorer`), each returning binary verdicts."""

from evalkit.scorers._base import Scorer, Verdict, as_text
from evalkit.scorers._exact import ExactScorer
from evalkit.scorers._similarity import Embedder, SemanticSimilarityScorer

__all__ = ["Embedder", "ExactScorer", "Scorer", "SemanticSimilarityScorer", "Verdict", "as_text"]
