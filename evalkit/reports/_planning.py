"""``report-planning.md``: the measured p, vote errors by N, items vs replicates, contrasts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalkit.reports._common import header
from evalkit.reports._markdown import cell, table


def planning_report(record: Any, doc: Mapping[str, Any]) -> str:
    lines = header(record, f"Planning Report: {cell(doc['experiment'])}", [
        ("Target error of an aggregated verdict", f"{doc['target_error']:g}")])
    lines += ["## Measured p", "",
              "p is the share of runs whose answer differs from the majority answer of their "
              "group: an entry's repeats, or an item's verdicts across replicates.", "",
              table(["Source", "Run", "p (95% CI)", "Minority / observations", "Groups"],
                    [[m["source"], m["run_id"],
                      f"{m['p']:.4f} [{m['ci_lower']:.4f}, {m['ci_upper']:.4f}]",
                      f"{m['minority']}/{m['observations']}", str(m["groups"])]
                     for m in doc["measured_p"]]), ""]
    crossover = doc["decision_crossover_p"]
    for m in doc["measured_p"]:
        if m["p"] >= crossover:
            lines += [f"p from {m['source']} is at or above the crossover p* = {crossover:g}: "
                      "the decision itself is the binding cost; no reasonable N rescues it.", ""]
    lines += ["## Vote Error by Number of Runs", ""]
    for m in doc["measured_p"]:
        for label, key in (("at p", "vote_error"), ("at the upper end of p's interval",
                                                    "vote_error_at_ci_upper")):
            votes = m[key]
            rules = list(votes["errors"])
            lines += [f"### {m['source']}: {label} = {votes['p']:.4f}", "",
                      table(["N", *rules],
                            [[str(n + 1), *(_number(votes["errors"][r][n]) for r in rules)]
                             for n in range(len(votes["errors"][rules[0]]))]), "",
                      table(["Rule", f"Smallest N with error ≤ {doc['target_error']:g}"],
                            [[r, "unreachable" if votes["recommended"][r] is None
                              else str(votes["recommended"][r])] for r in rules]), ""]
    lines += ["Majority with an even N is shown under both tie policies: a tie counted wrong, "
              "or counted right. Unanimity gets worse with every run; any-of errs only when "
              "every run does.", ""]
    allocation = doc["items_vs_replicates"]
    lines += ["## Items or Replicates", ""]
    if allocation["types"]:
        lines += [f"From replicate series {allocation['run_id']}: sigma² is the item-sampling "
                  "variance, tau² the variance of one call around its item's rate; "
                  "N* = sqrt(b tau² / (a sigma²)) replicates per item, a the cost of a call "
                  "(one replicate of one item), b the cost of an item.", "",
                  table(["Type", "sigma²", "tau²", "a", "b", "Replicates now", "N*",
                         "Best whole N", "Var × budget floor", "Buy next"],
                        [[t, f"{a['sigma2_item']:.6f}", f"{a['tau2_replicate']:.6f}",
                          f"{a['replicate_cost']:g}", f"{a['item_cost']:g}",
                          f"{a['current_replicates']:g}",
                          "—" if a["optimum"] is None else f"{a['optimum']:.2f}",
                          "—" if a["best_whole"] is None else str(a["best_whole"]),
                          f"{a['variance_times_budget_floor']:.6f}", a["buy"]]
                         for t, a in allocation["types"].items()]), "",
                  *(f"- {t}: {a['advice']}." for t, a in allocation["types"].items()), ""]
    else:
        lines += ["No replicate series with a variance split: run make eval-replicates.", ""]
    contrasts = doc["contrasts"]
    if contrasts is not None:
        lines += [f"## Contrast with {cell(contrasts['against'])}", "",
                  f"A_r is the mean over shared items of (this experiment minus "
                  f"{cell(contrasts['against'])}) in replicate r; intervals are Bonferroni-"
                  f"corrected over {contrasts['contrasts']} contrast(s).", "",
                  table(["Type", "Items", "A_r", "t interval (these items)",
                         "Items-and-replicates t (population)",
                         "Bootstrap interval (measured coverage)",
                         "Nested / whole bootstrap variance", "Replicates for ± "
                         + ("—" if contrasts["half_width"] is None
                            else f"{contrasts['half_width']:g}")],
                        [[c["test_type"], str(c["items"]),
                          ", ".join(f"{d:+.3f}" for d in c["differences"]),
                          _interval(c["t_interval"]),
                          "—" if c["population_interval"] is None
                          else _interval(c["population_interval"]),
                          _bootstrap(c), f"{c['nested_bootstrap_variance']:.2e} / "
                          f"{c['whole_replicate_bootstrap_variance']:.2e}",
                          "—" if c["replicates_needed"] is None else str(c["replicates_needed"])]
                         for c in contrasts["types"]]), "",
                  "- The replicate-mean t interval holds the items fixed: it covers the "
                  "difference on the evaluated item set, not on the population the items were "
                  "drawn from. For a claim about other items of the same kind, read the "
                  "items-and-replicates t interval, which also resamples items (variance "
                  "s_d²/m + s_A²/n, Welch-Satterthwaite degrees of freedom; Owen 2007).",
                  "- The whole-replicate bootstrap is shown for reference only and decides "
                  "nothing: at nominal 95% it covers about 0.75 of the time at 3 replicates "
                  "and 0.84 at 5 (seeded simulation, benchmarks/contrast_coverage.py).",
                  "- The nested bootstrap counts the within-replicate noise already inside each "
                  "A_r a second time; the replicate-mean t interval does not.", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _number(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-3 else f"{value:.2e}"


def _bootstrap(contrast: Mapping[str, Any]) -> str:
    coverage = contrast["bootstrap_measured_coverage"]
    label = "" if coverage is None else f" (covers ≈ {coverage:.2f}, not 0.95)"
    return _interval(contrast["bootstrap"]) + label


def _interval(doc: Mapping[str, Any]) -> str:
    return f"{doc['estimate']:+.3f} [{doc['low']:+.3f}, {doc['high']:+.3f}]"
