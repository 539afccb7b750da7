"""Scoring methods behind one interface (:class:`Scorer`), each returning binary verdicts
(your own scorer functions and MLflow scorers included, and the trajectory of a call's tool
calls), and the OpenAI-compatible chat endpoint the LLM judge (or a component) calls."""

from evalkit.scorers._base import Case, OutputGroup, Scorer, ScorerVerdict
from evalkit.scorers._endpoint import ChatEndpoint, EndpointStats, RetryPolicy
from evalkit.scorers._exact import ExactScorer, normalise
from evalkit.scorers._function import FunctionScorer, ScoreResult
from evalkit.scorers._llm_judge import JudgeOptions, JudgePrompt, LLMJudgeScorer
from evalkit.scorers._mlflow_scorer import MlflowScorer
from evalkit.scorers._similarity import Embedder, SemanticSimilarityScorer
from evalkit.scorers._trajectory import TrajectoryScorer

__all__ = ["Case", "ChatEndpoint", "Embedder", "EndpointStats", "ExactScorer", "FunctionScorer",
           "JudgeOptions", "JudgePrompt", "LLMJudgeScorer", "MlflowScorer", "OutputGroup",
           "RetryPolicy", "ScoreResult", "Scorer", "ScorerVerdict", "SemanticSimilarityScorer",
           "TrajectoryScorer", "normalise"]
