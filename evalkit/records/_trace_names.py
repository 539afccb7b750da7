"""The names evalkit writes on an entry's trace: its assessments, tags and span attributes.

Part of :mod:`evalkit.records.names`, which is where they are read from.
"""

# --- assessments on an entry's trace ---------------------------------------------------------

EXPECTATION_ASSESSMENT = "expected_output"
REVIEW_ASSESSMENT = "human_review"
"""The reviewer's verdict on an entry flagged for review: feedback a person adds in the UI
(Boolean: True pass, False fail). evalkit writes none of its own: the form's default type
is Boolean only while the trace holds no other value under that name."""
REVIEW_TRACE_TAG = "human_review"
"""On the trace of an entry flagged for review; its value is the entry's instructions."""
TRACE_TAG_VALUE_LIMIT = 4096
"""Characters MLflow keeps of a trace tag's value."""
LABEL_WANTED_ASSESSMENT = "label_wanted"
"""On a trace drawn for a label; its value is the name of the feedback wanted
(:attr:`TypeNames.label`, ``functional_label``)."""
ENTRY_ID_TRACE_TAG = "evalkit.entry_id"
TRACE_NAME_TAG = "mlflow.traceName"
SOURCE_RUN_METADATA = "mlflow.assessment.sourceRunId"
GOLDEN_SOURCE = "golden dataset"
"""The source of an expectation assessment."""


def code_source(part: str) -> str:
    """The source id of an assessment evalkit's own code gave (a scorer, the replicates)."""
    return f"evalkit.{part}"


# --- attributes of a trace's spans -----------------------------------------------------------

SPAN_REPEAT = "evalkit.repeat"
SPAN_REPLICATE = "evalkit.replicate"
SPAN_SEED = "evalkit.seed"
SPAN_LATENCY_MS = "evalkit.latency_ms"
SPAN_ERROR = "evalkit.error"
SPAN_JUDGE_MODEL = "evalkit.judge_model"
SPAN_PROMPT_USE = "evalkit.prompt_use"
SPAN_MESSAGE_FORMAT = "mlflow.message.format"
"""How the UI reads a chat span's inputs: ``openai`` for ``{"messages": [...]}``."""
SPAN_LLM_MODEL = "mlflow.llm.model"
SPAN_TOKEN_USAGE = "mlflow.chat.tokenUsage"
"""``{input_tokens, output_tokens, total_tokens}``; the store sums a trace's spans into the
trace's token usage."""
SPAN_COST = "mlflow.llm.cost"
"""``{input_cost, output_cost, total_cost}`` in US dollars."""
