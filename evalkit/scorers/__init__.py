"""Scoring methods behind one interface (:class:`Scorer`), each returning binary verdicts."""

from evalkit.scorers._base import Case, OutputGroup, Scorer, Verdict, as_text
from evalkit.scorers._exact import ExactScorer
from evalkit.scorers._llm_judge import JudgeOptions, JudgePrompt, LLMJudgeScorer
from evalkit.scorers._similarity import Embedder, SemanticSimilarityScorer

__all__ = ["Case", "Embedder", "ExactScorer", "JudgeOptions", "JudgePrompt", "LLMJudgeScorer",
           "OutputGroup", "Scorer", "SemanticSimilarityScorer", "Verdict", "as_text"]
