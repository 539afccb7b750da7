"""Kill rate per module from ``mutmut results --all true`` (read on standard input).

A mutant counts as killed when a test failed (``killed``) or it ran past mutmut's timeout
(``timeout``: an endless loop is caught too). Everything else, ``survived`` and ``no tests``
included, counts against the module. Exits 1 when a module is under the goal (90%), so
``make mutation`` fails until every survivor is killed or listed as equivalent.

    .venv/bin/mutmut results --all true | python tools/mutation_summary.py [--goal 0.9]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict

KILLED = {"killed", "timeout"}
# "    evalkit.stats._votes.x_vote_error__mutmut_3: survived"
LINE = re.compile(r"^\s*(?P<module>[\w.]+?)\.(?:x_|xǁ)\S*__mutmut_\d+: (?P<status>.+)$")


def summarise(lines: list[str]) -> dict[str, Counter[str]]:
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for line in lines:
        match = LINE.match(line)
        if match:
            by_module[match["module"]][match["status"].strip()] += 1
    return dict(by_module)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--goal", type=float, default=0.9, help="least kill rate per module")
    goal = parser.parse_args().goal
    by_module = summarise(sys.stdin.read().splitlines())
    if not by_module:
        print("no mutant results: run `mutmut run` first", file=sys.stderr)
        return 2
    print(f"{'module':32} {'mutants':>7} {'killed':>7} {'rate':>6}  other")
    under = []
    for module, counts in sorted(by_module.items()):
        total, killed = sum(counts.values()), sum(counts[s] for s in KILLED)
        rate = killed / total
        other = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()) if s not in KILLED)
        print(f"{module:32} {total:7} {killed:7} {rate:6.1%}  {other}")
        if rate < goal:
            under.append(module)
    if under:
        print(f"under {goal:.0%}: {', '.join(under)}", file=sys.stderr)
    return 1 if under else 0


if __name__ == "__main__":
    raise SystemExit(main())
