"""``report-stability.md``: how far a replicated evaluation moved, rendered from its parent run.

It answers the two questions of seeds/000 side by side (how far the rate moved, how many
items changed their answer), lists every unstable item with its answer in each replicate,
reads the variance split in plain words (what another replicate would buy) and gives pass@k
and pass^k per test type: what a retry rescues, and how often k tries all succeed.
"""

from __future__ import annotations

from evalkit.records import ItemCell, RunRecord, SeriesItems, TypeNames, names
from evalkit.reports._common import FAIL, MAX_ROWS, PASS, TEXT_LIMIT, distinct, header
from evalkit.reports._markdown import cell, table
from evalkit.stats import (
    PASS_K_INTERVAL,
    ItemMean,
    StabilityDocument,
    StabilitySummary,
    VarianceComponents,
)


def stability_report(record: RunRecord, doc: StabilityDocument, items: SeriesItems) -> str:
    seeds = doc.seeds
    metrics = doc.metrics
    replicates = range(len(seeds))
    extra = [("Replicates", f"{len(seeds)} (seeds: "
              + ", ".join(f"{r}: {seed}" for r, seed in enumerate(seeds)) + ")"),
             ("Root seed", f"{doc.root_seed} (pack id {cell(doc.pack_id)})")]
    lines = header(record, f"Stability Report: {cell(record.tags.get(names.EVAL_TYPE_TAG, ''))}",
                   extra)
    lines += [
        "## Per-replicate Results", "",
        table(["Metric", *(f"Replicate {r}" for r in replicates), "Mean", "SD", "Spread"],
              [[m.metric, *(_rate(m.rates.get(r)) for r in replicates),
                f"{m.mean:.4f}", "—" if m.sd is None else f"{m.sd:.4f}",
                f"{m.spread:.4f}"] for m in metrics]),
        "",
        "## Stability", "",
        table(["Metric", "Mean (95% CI at effective n)", "Effective n", "Repeated items",
               "Unstable items", "Noise floor"],
              [[m.metric, _interval(m), _effective_n(m), str(m.repeated_items),
                str(m.unstable_items), _percent(m.noise_floor)] for m in metrics]),
        "",
        "The noise floor is the largest share of items on which two replicates disagreed. A "
        "comparison between two runs whose gap does not clear twice the floor is inside the "
        "noise: `evalkit compare` refuses to call a winner there.", "",
        "## Variance Split", "",
        table(["Metric", "Completion", "Item", "Total", "Trials", "Items"],
              [[m.metric, *_components(m.components)] for m in metrics]),
        "",
        *(f"- {m.metric}: {_reading(m.components)}" for m in metrics),
        "",
        "## Flip Partition", "",
        table(["Metric", "Always right", "Always wrong", "Changed at least once", "Seen once"],
              [[m.metric, *(str(n) for n in (m.partition.always_right, m.partition.always_wrong,
                                              m.partition.changed, m.partition.seen_once))]
               for m in metrics]),
        "",
        "## Pairwise Disagreement", "",
        table(["Metric", "Replicates", "Shared items", "Disagree", "Rate"],
              [[m.metric, f"{p.first}-{p.second}", str(p.shared), str(p.disagree),
                _percent(p.rate)] for m in metrics for p in m.pairwise]),
        "",
        "## Reliability over Replicates", "",
        "pass@k is the chance that at least one of k replicates gets an item right (what a "
        "retry rescues); pass^k that all k do (what a user who asks k times is served).", "",
    ]
    for m in metrics:
        lines += [f"### {TypeNames.of_accuracy(m.metric).test_type}", "", *_pass_k(m), ""]
    lines += ["## Unstable Items", ""]
    for m in metrics:
        test_type = TypeNames.of_accuracy(m.metric).test_type
        unstable = m.partition.changed_items
        rows = items.types.get(test_type, {})
        lines += [f"### {test_type}", ""]
        if unstable:
            lines.append(table(["ID", *(f"Replicate {r}" for r in replicates)],
                               [[cell(item_id), *(_answer(c, test_type) for c in rows[item_id])]
                                for item_id in unstable[:MAX_ROWS]]))
            if len(unstable) > MAX_ROWS:
                lines += ["", f"Showing {MAX_ROWS} of {len(unstable)} unstable items; every "
                          "item is in the run's stability/items.json artifact."]
        else:
            lines.append("No item changed its answer.")
        lines.append("")
    lines += [
        "## Notes", "",
        "- Each replicate is a nested MLflow run with its own metrics and reports; a cell "
        "shows whether the item's score matched its expectation in that replicate, and its "
        "output(s).",
        "- Variance split: the moment estimator of NIST AI 800-3 Appendix A.3 eq. 22. "
        "Completion is the pooled within-item variance over sum(t_i - 1), divided by the mean "
        "trials per item; total is the variance of the replicate-averaged item scores; item "
        "= total - completion, floored at 0.",
        "- The interval is a Wilson interval at the effective sample size n_eff = "
        "p(1 - p) x items / total, the size of a binomial sample with the same variance.",
        "- pass@k = mean over items of 1 - C(n - c, k)/C(n, k), pass^k = mean of C(c, k)/C(n, k) "
        "(Chen et al. 2021; tau-bench, Yao et al. 2024), an item right c times in the n "
        "replicates that scored it; an item scored fewer than k times is not counted at k. "
        "Their intervals count the items as the sample: "
        f"{PASS_K_INTERVAL}.",
        f"- Seeds: {cell(doc.derivation, 200)}; "
        "they are recorded in replicates.lock.json next to the reports.", "",
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def _pass_k(metric: StabilitySummary) -> list[str]:
    """One type's pass@k and pass^k, a row per k."""
    reliability = metric.reliability
    if reliability is None:
        return ["Not recorded: this series ran before evalkit kept pass@k and pass^k."]
    level = f"{reliability.confidence:.0%} CI"
    return [table(["k", "Items", f"pass@k ({level})", f"pass^k ({level})"],
                  [[str(row.k), str(row.items), _item_mean(row.pass_at), _item_mean(row.pass_hat)]
                   for row in reliability.by_k])]


def _item_mean(mean: ItemMean) -> str:
    return f"{mean.value:.3f} [{mean.low:.3f}, {mean.high:.3f}]"


def _rate(rate: tuple[int, int] | None) -> str:
    if rate is None:
        return "—"
    successes, n = rate
    return f"{successes}/{n} ({successes / n:.3f})"


def _interval(metric: StabilitySummary) -> str:
    interval = metric.interval
    if interval is None:
        return f"{metric.mean:.3f}"
    return f"{metric.mean:.3f} [{interval.low:.3f}, {interval.high:.3f}]"


def _effective_n(metric: StabilitySummary) -> str:
    return "—" if metric.interval is None else f"{metric.interval.n_eff:.1f}"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.2f}%"


def _components(components: VarianceComponents | None) -> list[str]:
    if components is None:
        return ["—"] * 5
    return [f"{components.completion:.6f}", f"{components.item:.6f}",
            f"{components.total:.6f}", f"{components.trials:g}", str(components.items)]


def _reading(components: VarianceComponents | None) -> str:
    """What another replicate buys, in plain words."""
    if components is None:
        return "no variance split: it needs two items and at least one item seen twice."
    shrink = -components.width_change_if_trials_scaled(2) * 100
    if components.total <= 0:
        return "every item scored the same in every replicate: there is no variance to split."
    prefix = f"doubling the replicates would shrink the interval by about {shrink:.0f}%"
    if components.item >= components.completion:
        return f"{prefix}; the rest of the width is item sampling: add items."
    return (f"{prefix}; completion sampling carries most of the variance: more replicates "
            "pay here before more items do.")


def _answer(item: ItemCell | None, test_type: str) -> str:
    """The item's answer in one replicate: its mark and output(s). Several outputs (the
    repeats of an entry, the variants of a bias group) are shown by how they differ."""
    if item is None:
        return "—"
    mark = PASS if item.correct else FAIL
    if item.error:
        return f"{mark} error: {cell(item.error, 60)}"
    outputs = item.outputs
    return f"{mark} {cell(outputs[0], TEXT_LIMIT) if len(outputs) == 1 else distinct(outputs)}"
