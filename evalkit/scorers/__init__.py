"""Scoring methods behind one interface (:class:`Scorer`), each returning binary verdicts
(your own scorer functions included), and the OpenAI-compatible chat endpoint the LLM judge
(or a component) calls."""

from evalkit.scorers._base import Case, OutputGroup, Scorer, ScorerVerdict
from evalkit.scorers._endpoint import ChatEndpoint, EndpointStats, RetryPolicy
from evalkit.scorers._exact import ExactScorer, normalise
from evalkit.scorers._function import FunctionScorer, ScoreResult
from evalkit.scorers._llm_judge import JudgeOptions, JudgePrompt, LLMJudgeScorer
from evalkit.scorers._similarity import Embedder, SemanticSimilarityScorer

__all__ = ["Case", "ChatEndpoint", "Embedder", "EndpointStats", "ExactScorer", "FunctionScorer",
           "JudgeOptions", "JudgePrompt", "LLMJudgeScorer", "OutputGroup", "RetryPolicy",
           "ScoreResult", "Scorer", "ScorerVerdict", "SemanticSimilarityScorer", "normalise"]
