"""Selection: which entries a run invokes, how often, and which of their types it scores.

The plan is fixed before the first component call, so every configuration mistake (a missing
threshold, an unregistered mock adapter, an empty selection) surfaces before money is spent.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit._errors import ConfigError
from evalkit.config import SEQUENTIAL_QUESTIONS, EvalConfig
from evalkit.dataset import REPEATABILITY, TEST_TYPES, Dataset, Entry

ALL_TYPES = "all"


@dataclass(frozen=True)
class Selection:
    """The command-line choices of one run: ``--type``, ``--groups``, ``--human-review``,
    ``--sequential`` (or ``SEQUENTIAL``)."""

    test_type: str
    groups: tuple[str, ...] | None = None
    human_review_only: bool = False
    sequential: str | None = None
    """The question the run answers sequentially (``dataset`` or ``population``), or
    ``None``: every selected entry is called."""

    def __post_init__(self) -> None:
        if self.test_type != ALL_TYPES and self.test_type not in TEST_TYPES:
            raise ConfigError(f"--type={self.test_type!r} is not a test type: use 'all' or one "
                              "of " + ", ".join(TEST_TYPES))
        if self.groups is not None and (not self.groups or not all(self.groups)):
            raise ConfigError("--groups needs a comma-separated list of group names, e.g. "
                              "--groups=billing,refunds")
        if self.sequential is not None and self.sequential not in SEQUENTIAL_QUESTIONS:
            raise ConfigError(f"--sequential={self.sequential!r} is not a question: use one of "
                              + ", ".join(SEQUENTIAL_QUESTIONS))

    @classmethod
    def parse(cls, test_type: str, groups: str | None = None,
              human_review_only: bool = False, sequential: str | None = None) -> Selection:
        names = None if groups is None else tuple(g.strip() for g in groups.split(","))
        return cls(test_type, names, human_review_only, sequential)

    @property
    def groups_filter(self) -> str:
        """The ``groups_filter`` tag: the --groups value, or ``all``."""
        return ",".join(self.groups) if self.groups else "all"

    @property
    def exports_human_review(self) -> bool:
        """Whether this run writes the human-review checklist."""
        return self.human_review_only or self.test_type == ALL_TYPES

    def arguments(self) -> str:
        """The selection as an eval script's options: ``--type=... [--groups=...]
        [--human-review]``."""
        return (f"--type={self.test_type}"
                + (f" --groups={self.groups_filter}" if self.groups else "")
                + (" --human-review" if self.human_review_only else "")
                + (f" --sequential={self.sequential}" if self.sequential else ""))

    def selects(self, entry: Entry) -> bool:
        if self.groups is not None and entry.group not in self.groups:
            return False
        if self.human_review_only and not entry.human_review:
            return False
        return self.test_type == ALL_TYPES or self.test_type in entry.test_types

    def types_of(self, entry: Entry) -> tuple[str, ...]:
        """The entry's types this run scores, in the canonical test-type order."""
        scoped = entry.test_types if self.test_type == ALL_TYPES else (self.test_type,)
        return tuple(t for t in TEST_TYPES if t in scoped)


@dataclass(frozen=True)
class PlannedEntry:
    entry: Entry
    types: tuple[str, ...]
    calls: int
    """``REPEAT_COUNT`` when repeatability is in scope, else exactly 1."""
    human_review: bool
    """Exported to the human-review checklist in this run."""


@dataclass(frozen=True)
class RunPlan:
    selection: Selection
    items: tuple[PlannedEntry, ...]

    @property
    def types(self) -> tuple[str, ...]:
        """Test types evaluated by this run, in canonical order (the ``test_types`` tag)."""
        present = {t for item in self.items for t in item.types}
        return tuple(t for t in TEST_TYPES if t in present)

    @property
    def total_calls(self) -> int:
        return sum(item.calls for item in self.items)


def plan_run(dataset: Dataset, selection: Selection, config: EvalConfig) -> RunPlan:
    """Choose the entries and calls of a run, checking that the config can score all of them."""
    items = []
    selected = [entry for entry in dataset.entries if selection.selects(entry)]
    config.check_types({t for entry in selected for t in selection.types_of(entry)})
    for entry in selected:
        types = selection.types_of(entry)
        calls = config.require_repeat_count() if REPEATABILITY in types else 1
        for adapter in entry.mock_fixtures:
            if adapter not in config.mock_adapters:
                registered = ", ".join(sorted(config.mock_adapters)) or "none"
                raise ConfigError(
                    f"{entry.path}: /mock_fixtures/{adapter}: no adapter {adapter!r} is "
                    f"registered in {config.script} MOCK_ADAPTERS (registered: {registered}); "
                    "register a factory for it or rename the fixture")
        items.append(PlannedEntry(entry, types, calls,
                                  entry.human_review and selection.exports_human_review))
    plan = RunPlan(selection, tuple(items))
    if not items:
        raise ConfigError(
            f"nothing to evaluate: no entry of {dataset.path} matches {selection.arguments()}")
    return plan
