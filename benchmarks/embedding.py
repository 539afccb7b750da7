"""Embedding throughput: scoring with ``semantic_similarity`` against a raw batched
``model.encode`` of the same texts, side by side in one process.

1,000 distinct texts (200 entries x 5 repeats, like a repeatability run) are encoded
``--rounds`` times each way (default 2), alternating, and the best round of each is kept:

* raw: ``SentenceTransformer.encode(texts, batch_size=64, normalize_embeddings=True)``;
* scored: ``SemanticSimilarityScorer.among_outputs`` over the 200 groups (encoding, the
  pairwise cosines and the verdicts), through the same :class:`Embedder` a run uses.

The model is loaded once, by the :class:`Embedder` that both sides share, as in a process
that scores several runs (a replicate series); its one-off load time is printed apart.

    .venv/bin/python benchmarks/embedding.py [--texts 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit.scorers import Embedder, OutputGroup, SemanticSimilarityScorer  # noqa: E402

TOPICS = ("refund", "invoice", "password reset", "parcel delay", "login error", "upgrade")


def texts(n: int) -> list[str]:
    return [f"Ticket {i}: the customer asks about {TOPICS[i % len(TOPICS)]} for order "
            f"{i * 7919 % 100_000}; route it to the right team and reply politely."
            for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    corpus = texts(args.texts)
    groups = [OutputGroup(("q",) * 5, tuple(corpus[i:i + 5])) for i in range(0, len(corpus), 5)]
    embedder = Embedder()
    started = time.perf_counter()
    model = embedder.model()
    load = time.perf_counter() - started
    scorer = SemanticSimilarityScorer(0.9, embedder)
    model.encode(corpus[:64], batch_size=64)  # warm-up: first-call allocations
    raw_times, scored_times = [], []
    for _ in range(args.rounds):
        started = time.perf_counter()
        model.encode(corpus, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                     show_progress_bar=False)
        raw_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        verdicts = scorer.among_outputs(groups)
        scored_times.append(time.perf_counter() - started)
        assert len(verdicts) == len(groups)
    raw, scored = min(raw_times), min(scored_times)
    print(f"model load (once per process): {load:.2f} s")
    print(f"raw encode:      {len(corpus) / raw:8.1f} texts/s  ({raw:.2f} s, best of "
          f"{args.rounds})")
    print(f"semantic scorer: {len(corpus) / scored:8.1f} texts/s  ({scored:.2f} s, best of "
          f"{args.rounds})")
    print(f"ratio scorer/raw: {raw / scored:.2f}x")


if __name__ == "__main__":
    main()
