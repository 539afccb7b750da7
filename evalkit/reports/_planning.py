"""``report-planning.md``: the measured p, vote errors by N, items vs replicates, contrasts."""

from __future__ import annotations

from evalkit.records import RunRecord
from evalkit.reports._common import header
from evalkit.reports._markdown import cell, table
from evalkit.stats import DECISION_CROSSOVER_P, ContrastInterval, ContrastPlan, Plan


def planning_report(record: RunRecord, plan: Plan) -> str:
    lines = header(record, f"Planning Report: {cell(plan.experiment)}", [
        ("Target error of an aggregated verdict", f"{plan.target_error:g}")])
    lines += ["## Measured p", "",
              "p is the share of runs whose answer differs from the majority answer of their "
              "group: an entry's repeats, or an item's verdicts across replicates.", "",
              table(["Source", "Run", "p (95% CI)", "Minority / observations", "Groups"],
                    [[m.source, m.run_id,
                      f"{m.disagreement.p:.4f} [{m.disagreement.interval.low:.4f}, "
                      f"{m.disagreement.interval.high:.4f}]",
                      f"{m.disagreement.minority}/{m.disagreement.observations}",
                      str(m.disagreement.groups)] for m in plan.measured]), ""]
    crossover = DECISION_CROSSOVER_P
    for m in plan.measured:
        if m.disagreement.p >= crossover:
            lines += [f"p from {m.source} is at or above the crossover p* = {crossover:g}: "
                      "the decision itself is the binding cost; no reasonable N rescues it.", ""]
    lines += ["## Vote Error by Number of Runs", ""]
    for m in plan.measured:
        for label, votes in (("at p", m.table),
                             ("at the upper end of p's interval", m.conservative)):
            rules = list(votes.errors)
            lines += [f"### {m.source}: {label} = {votes.p:.4f}", "",
                      table(["N", *rules],
                            [[str(n + 1), *(_number(votes.errors[r][n]) for r in rules)]
                             for n in range(len(votes.errors[rules[0]]))]), "",
                      table(["Rule", f"Smallest N with error ≤ {plan.target_error:g}"],
                            [[r, "unreachable" if votes.recommended[r] is None
                              else str(votes.recommended[r])] for r in rules]), ""]
    lines += ["Majority with an even N is shown under both tie policies: a tie counted wrong, "
              "or counted right. Unanimity gets worse with every run; any-of errs only when "
              "every run does.", ""]
    lines += ["## Items or Replicates", ""]
    if plan.allocations:
        lines += [f"From replicate series {plan.allocation_run}: sigma² is the item-sampling "
                  "variance, tau² the variance of one call around its item's rate; "
                  "N* = sqrt(b tau² / (a sigma²)) replicates per item, a the cost of a call "
                  "(one replicate of one item), b the cost of an item.", "",
                  table(["Type", "sigma²", "tau²", "a", "b", "Replicates now", "N*",
                         "Best whole N", "Var × budget floor", "Buy next"],
                        [[t, f"{a.sigma2:.6f}", f"{a.tau2:.6f}", f"{a.replicate_cost:g}",
                          f"{a.item_cost:g}", f"{a.current_replicates:g}",
                          "—" if a.optimum is None else f"{a.optimum:.2f}",
                          "—" if a.best_whole is None else str(a.best_whole),
                          f"{a.floor:.6f}", a.buy]
                         for t, a in plan.allocations.items()]), "",
                  *(f"- {t}: {a.advice()}." for t, a in plan.allocations.items()), ""]
    else:
        lines += ["No replicate series with a variance split: run make eval-replicates.", ""]
    if plan.labels:
        lines += ["## People's Labels for the Judge", "",
                  f"From run {plan.labels[0].run_id}: the labels on drawn entries that bring "
                  f"each corrected accuracy to ±{plan.labels[0].half_width:g} (95%), at the "
                  "agreement measured so far (report-judge.md of that run).", "",
                  table(["Type", "Drawn labels now", "Labels needed (scorer pass / fail)",
                         "More to give"],
                        [[cell(x.test_type), str(x.labels_drawn),
                          "out of reach: add entries" if x.needed is None
                          else f"{x.needed.get('pass', 0)} / {x.needed.get('fail', 0)}",
                          "—" if x.more is None else str(x.more)] for x in plan.labels]), ""]
    if plan.against is not None:
        lines += [f"## Contrast with {cell(plan.against)}", "",
                  f"A_r is the mean over shared items of (this experiment minus "
                  f"{cell(plan.against)}) in replicate r; intervals are Bonferroni-"
                  f"corrected over {plan.contrast_count} contrast(s).", "",
                  table(["Type", "Items", "A_r", "t interval (these items)",
                         "Items-and-replicates t (population)",
                         "Bootstrap interval (measured coverage)",
                         "Nested / whole bootstrap variance", "Replicates for ± "
                         + ("—" if plan.half_width is None else f"{plan.half_width:g}")],
                        [[c.test_type, str(c.items),
                          ", ".join(f"{d:+.3f}" for d in c.differences),
                          signed_interval(c.t_interval),
                          "—" if c.population_interval is None
                          else signed_interval(c.population_interval),
                          _bootstrap(c), f"{c.nested_variance:.2e} / "
                          f"{c.whole_replicate_variance:.2e}",
                          "—" if c.replicates_needed is None else str(c.replicates_needed)]
                         for c in plan.contrasts]), "",
                  "- The replicate-mean t interval holds the items fixed: it covers the "
                  "difference on the evaluated item set, not on the population the items were "
                  "drawn from. For a claim about other items of the same kind, read the "
                  "items-and-replicates t interval, which also resamples items (variance "
                  "s_d²/m + s_A²/n, Owen 2007; each part with the t quantile of its own degrees "
                  "of freedom, Banerjee 1960, so that a shift shared by a replicate is covered "
                  "too; wide at 2 replicates, which say little about such a shift).",
                  "- The whole-replicate bootstrap is shown for reference only and decides "
                  "nothing: at nominal 95% it covers about 0.75 of the time at 3 replicates "
                  "and 0.84 at 5 (seeded simulation, benchmarks/contrast_coverage.py).",
                  "- The nested bootstrap counts the within-replicate noise already inside each "
                  "A_r a second time; the replicate-mean t interval does not.", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _number(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-3 else f"{value:.2e}"


def _bootstrap(contrast: ContrastPlan) -> str:
    coverage = contrast.bootstrap_coverage
    label = "" if coverage is None else f" (covers ≈ {coverage:.2f}, not 0.95)"
    return signed_interval(contrast.bootstrap) + label


def signed_interval(interval: ContrastInterval) -> str:
    """A contrast's estimate and interval, signed: ``+0.030 [-0.010, +0.070]``."""
    return f"{interval.estimate:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]"
