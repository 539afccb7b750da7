"""The evidence behind a verdict, as its assessment's rationale shows it in MLflow: one
readable line per entry and test type (pass or fail, which output was scored, an error, a
similarity against its threshold, the judge's reply, the distinct answers, the group)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from evalkit.dataset import COMPARATIVE_TYPES
from evalkit.records import ItemResult, TypeNames, as_text


def verdict_rationale(test_type: str, item: ItemResult, params: Mapping[str, str],
                      of_calls: int) -> str:
    """The evidence behind a verdict, in one readable line."""
    parts = [("PASS" if item.passed else "FAIL")
             + ("" if item.expected_pass else " (annotated expected_pass: false)")]
    if of_calls > 1:
        parts.append(f"scored on call 0's output, the first of the entry's {of_calls} "
                     "(repeatability compares them all)")
    if item.error:
        parts.append(f"error: {item.error}")
    if item.rationale:  # the scorer's own words: a trajectory's first mismatch, a function's
        parts.append(item.rationale)
    if item.similarity is not None:
        threshold = params.get(TypeNames.of(test_type).similarity_threshold)
        label = "average pairwise cosine" if test_type in COMPARATIVE_TYPES else "cosine"
        parts.append(f"{label} {item.similarity:.4f}"
                     + (f" against threshold {threshold}" if threshold else ""))
    if item.judge_reply is not None:
        parts.append(f"judge replied {item.judge_reply!r}"
                     + (" (invalid judgement)" if item.invalid_judgement else ""))
    if test_type in COMPARATIVE_TYPES and len(item.outputs) > 1:
        counts = Counter(as_text(o) for o in item.outputs)
        parts.append(f"{len(counts)} distinct answer(s) of {len(item.outputs)}: " + ", ".join(
            f"{shortened(text)!r} x{n}" for text, n in counts.most_common()))
    if len(item.entry_ids) > 1:
        parts.append(f"group {item.id} ({', '.join(item.entry_ids)})")
    return "; ".join(parts)


def shortened(text: str, limit: int = 120) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[:limit - 1] + "…"
