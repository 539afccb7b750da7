"""The exact and semantic-similarity scorers; similarity runs the real MiniLM model."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pytest

from evalkit.records import as_text
from evalkit.scorers import Case, Embedder, ExactScorer, OutputGroup, SemanticSimilarityScorer
from evalkit.scorers._exact import matches, normalise


def output_group(*outputs: Any) -> OutputGroup:
    return OutputGroup(("q",) * len(outputs), outputs)


@pytest.mark.parametrize(("output", "expected"), [
    ("Billing", "billing"),
    ("  billing\n", "billing"),
    ("two   words\there", "Two words here"),
    ("ﬁle", "file"),  # NFKC folds the ligature
    (1, 1.0),
    ({"category": "Billing", "reply": "anything"}, {"category": "billing"}),
    ('{"category": "billing", "extra": 1}', {"category": "billing"}),
    ([1, "A"], [1.0, "a"]),
    ({"a": {"b": "X", "c": 2}}, {"a": {"b": "x"}}),
    (None, None),
    ("1", 1),  # a JSON string output is parsed when a non-string is expected
])
def test_exact_matches_after_normalisation(output: Any, expected: Any) -> None:
    assert matches(output, expected)


@pytest.mark.parametrize(("output", "expected"), [
    ("billing", "shipping"),
    (True, 1),  # booleans never equal numbers
    ({"category": "billing"}, {"category": "billing", "priority": "high"}),
    ("not json", {"category": "billing"}),
    ([1, 2], [1]),
    ({"category": "billing"}, "billing"),
])
def test_exact_rejects(output: Any, expected: Any) -> None:
    assert not matches(output, expected)


def test_exact_among_outputs_needs_all_equal() -> None:
    scorer = ExactScorer()
    verdicts = scorer.among_outputs([output_group(*outputs) for outputs in (
        ["A", "a ", "a"], ["a", "b"], [{"k": 1}, {"k": 1.0}], [{"k": 1}, {"k": 1, "extra": 2}],
        [True, 1])])
    assert [v.passed for v in verdicts] == [True, False, True, False, False]


def test_normalise_is_idempotent() -> None:
    value = {"k": [" A  b ", 3, {"x": "Ｘ"}]}
    assert normalise(normalise(value)) == normalise(value)


class CountingEmbedder(Embedder):
    """The real model, counting how many encode batches it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def encode(self, texts: Any) -> Any:
        self.batches.append(list(texts))
        return super().encode(texts)


@pytest.fixture(scope="module")
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


def test_similarity_against_expected_uses_real_cosines(embedder: CountingEmbedder) -> None:
    scorer = SemanticSimilarityScorer(0.5, embedder)
    pairs = [("The parcel never arrived.", "My package has not been delivered."),
             ("The parcel never arrived.", "What is the capital of France?"),
             ("same text", "same text")]
    embedder.batches.clear()
    verdicts = scorer.against_expected([Case("q", o, e) for o, e in pairs])
    assert len(embedder.batches) == 1  # one batch for the whole call
    vectors = embedder.encode([t for pair in pairs for t in pair])
    cosines = [float(vectors[a] @ vectors[b]) for a, b in pairs[:2]]
    assert verdicts[0].similarity == pytest.approx(cosines[0], abs=1e-6)
    assert verdicts[1].similarity == pytest.approx(cosines[1], abs=1e-6)
    assert verdicts[0].similarity > 0.5 > 0.2 > verdicts[1].similarity
    assert [v.passed for v in verdicts] == [True, False, True]
    assert verdicts[2].similarity == 1.0  # identical texts are exactly 1


def test_similarity_among_outputs_is_the_average_pairwise_cosine(
        embedder: CountingEmbedder) -> None:
    groups = [["refund my order", "please refund my order", "I want my money back"],
              ["hello", "hello"],
              ["billing issue", "the app crashes", "where is my parcel", "reset password"]]
    embedder.batches.clear()
    scorer = SemanticSimilarityScorer(0.6, embedder)
    verdicts = scorer.among_outputs([output_group(*g) for g in groups])
    assert len(embedder.batches) == 1
    for group, verdict in zip(groups, verdicts, strict=True):
        vectors = embedder.encode(group)
        pairs = [1.0 if a == b else float(vectors[a] @ vectors[b])
                 for a, b in combinations(group, 2)]
        assert verdict.similarity == pytest.approx(float(np.mean(pairs)), abs=1e-6)
    assert [v.passed for v in verdicts] == [True, True, False]
    assert verdicts[1].similarity == 1.0


def test_similarity_embeds_json_outputs_as_canonical_text(embedder: CountingEmbedder) -> None:
    scorer = SemanticSimilarityScorer(0.99, embedder)
    (verdict,) = scorer.among_outputs([output_group({"b": 1, "a": "x"}, {"a": "x", "b": 1})])
    assert verdict.similarity == 1.0
    assert as_text({"b": 1, "a": "x"}) == '{"a": "x", "b": 1}'


def test_similarity_exactly_at_the_threshold_passes(embedder: CountingEmbedder) -> None:
    # The README's promise: a threshold of 1.0 means "all identical", so identical outputs
    # pass at 1.0; and any cosine equal to the threshold passes it (>=, not >).
    identical = SemanticSimilarityScorer(1.0, embedder)
    (alone,) = identical.against_expected([Case("q", "same text", "same text")])
    assert alone.passed and alone.similarity == 1.0
    assert [v.passed for v in identical.among_outputs([
        output_group("same text", "same text", "same text"),
        output_group("same text", "same text", "some text")])] == [True, False]
    # In float32 a unit vector's dot with itself is sometimes just under 1: in this batch
    # (encoded exactly as among_outputs encodes it) some texts' are; they must still pass.
    texts = [f"ticket number {i} about {topic}" for i in range(40)
             for topic in ("billing", "shipping")]
    batch = embedder.encode(texts)
    assert any(float(batch[t] @ batch[t]) < 1.0 for t in texts)
    verdicts = identical.among_outputs([output_group(t, t) for t in texts])
    assert all(v.passed and v.similarity == 1.0 for v in verdicts)

    output, expected = "The parcel never arrived.", "My package has not been delivered."
    vectors = embedder.encode([output, expected])
    cosine = float(vectors[output] @ vectors[expected])
    (at,) = SemanticSimilarityScorer(cosine, embedder).against_expected(
        [Case("q", output, expected)])
    assert at.similarity == cosine and at.passed
    (above,) = SemanticSimilarityScorer(float(np.nextafter(cosine, 2.0)), embedder) \
        .against_expected([Case("q", output, expected)])
    assert not above.passed
    group = output_group(output, expected)
    (among_at,) = SemanticSimilarityScorer(cosine, embedder).among_outputs([group])
    assert among_at.passed
