"""After the run: reading finished runs, never calling the component.

Two runs compared (:func:`compare`, with non-inferiority :class:`Margins`;
:func:`what_differs`; :func:`compare_markdown` for CI), the replicates a difference needs
planned (:func:`build_plan`), and people's labels on a run (:class:`LabelSession`,
:func:`import_labels`, and the labels a run is given as it finishes).
Nothing here imports the call engine.
"""

from evalkit.review._compare import (
    FLOOR_MULTIPLE,
    MetricComparison,
    Side,
    compare,
    load_side,
    margin_verdict,
    no_winner,
)
from evalkit.review._compare_summary import (
    compare_markdown,
    comparison_verdict,
    floor_text,
    margin_line,
    margin_text,
)
from evalkit.review._differences import Difference, shown_value, what_differs
from evalkit.review._label_session import (
    LabelOutcome,
    LabelSession,
    feedback_taken_in,
    import_labels,
)
from evalkit.review._labelling import (
    description_tags,
    known_entries,
    label_new_run,
    read_labels,
)
from evalkit.review._margins import Margins
from evalkit.review._planning import PlanOptions, build_plan, record_plan

__all__ = [
    "FLOOR_MULTIPLE", "Difference", "LabelOutcome", "LabelSession", "Margins",
    "MetricComparison", "PlanOptions", "Side", "build_plan", "compare", "compare_markdown",
    "comparison_verdict", "description_tags", "feedback_taken_in", "floor_text",
    "import_labels", "known_entries", "label_new_run", "load_side", "margin_line",
    "margin_text", "margin_verdict", "no_winner", "read_labels", "record_plan", "shown_value",
    "what_differs",
]
