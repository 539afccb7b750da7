"""A second eval script: your own OpenAI-backed component, judged by an LLM.

It shows how to wire a component that calls a chat model behind an OpenAI-compatible API
(OpenAI, Azure, vLLM, Ollama, a llama.cpp server) and to score it with the ``llm_judge``
scorer over the same endpoint. Run it from the repository root:

    export OPENAI_BASE_URL=http://127.0.0.1:8000/v1   # the endpoint (omit for api.openai.com)
    export OPENAI_API_KEY=sk-...                      # any non-empty value for a local server
    python examples/eval_llm.py --type=all            # every test type of datasets/llm-smoke
    python examples/eval_llm.py --type=repeatability  # one type

`make test-llm` runs it offline against a local llama.cpp server with Gemma 3 270M.

All scoring parameters are the constants below; change them here, never through Makefile
variables, command-line flags or dataset fields. The endpoint and the key come from the
environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), never from constants: evalkit redacts
the key from everything it writes.
"""

from __future__ import annotations

import functools

import evalkit
from evalkit import Call, Entry

# --- what is evaluated, and where it is recorded ------------------------------------------
EXPERIMENT_NAME = "gemma-chat/smoke"  # MLflow experiment: <component>/<eval-name>
DATASET_PATH = "datasets/llm-smoke"
REPORTS_DIR = "reports/llm"

# --- thresholds ------------------------------------------------------------------------------
# The example model is Gemma 3 270M, a *base* model: it continues text and does not follow
# instructions, neither as the component nor as the judge. The thresholds are therefore 0 and
# a run demonstrates the plumbing (real calls, fresh repeats, judge calls, MLflow, reports),
# not quality. Raise them when you point this script at a model worth judging.
EVAL_MIN_ACCURACY = 0.0
EVAL_MIN_ACCURACY_REPEATABILITY = 0.0

# --- repeatability ---------------------------------------------------------------------------
REPEAT_COUNT = 3  # 3-5 for routine runs, 10-20 for focused passes
MAX_CONCURRENCY = 2  # component calls, and judge calls, in flight at once

# --- scoring: an LLM judge at temperature 0 replies exactly 0 or 1 ----------------------------
SCORER = "llm_judge"  # every test type: against expected_output, among repeats, across a group
JUDGE_MODEL = "gemma3-270m"  # served by the same endpoint as the component
# Gemma's chat template has no system role and llama.cpp drops system messages silently:
# put the judge's instructions at the head of the user message instead.
JUDGE_SYSTEM_IN_USER = True

# --- the component ---------------------------------------------------------------------------
COMPONENT_MODEL = "gemma3-270m"
COMPONENT_TEMPERATURE = 1.0  # sampled: the repeats of an entry are expected to differ
COMPONENT_MAX_TOKENS = 40
COMPONENT_PARAMS = {  # logged as MLflow params component.<name>
    "model": COMPONENT_MODEL,
    "temperature": COMPONENT_TEMPERATURE,
    "max_tokens": COMPONENT_MAX_TOKENS,
}
# A component that sends prompts of its own declares them, to have them versioned in MLflow's
# prompt registry and compared by `evalkit compare`; this one sends the entry as it is:
# COMPONENT_PROMPTS = {"system": SYSTEM_PROMPT}

# --- cost: USD per million (input, output) tokens of each model the calls report -------------
# The tokens every call reports (call.record_llm_response below, and the judge's) are on the
# traces (MLflow's Token Usage) and the run's metrics; priced models add cost_usd and
# judge_cost_usd. A local model costs nothing: put your provider's prices here.
TOKEN_PRICES = {COMPONENT_MODEL: (0.0, 0.0)}


@functools.cache
def _chat() -> evalkit.ChatEndpoint:
    # Created once, on the first call; OPENAI_BASE_URL and OPENAI_API_KEY are read here.
    return evalkit.ChatEndpoint(COMPONENT_MODEL)


def invoke_component(entry: Entry, call: Call) -> str:
    """Send the entry's prompt as one user message; return the reply text.

    Every repeat of a repeatability entry must be a fresh call to the model. llama.cpp's
    server reuses a cached prompt by default (``cache_prompt``) and a caching gateway may
    answer an identical request from its cache; either would return, or bias the draw toward,
    an earlier answer and make the component look more repeatable than it is. So the prompt
    cache is switched off and the request is marked not to be stored (llama-cpp-python's
    server, used by `make test-llm`, ignores ``cache_prompt`` and draws a new sampling seed for
    every request without one, so its repeats are fresh either way). ``extra_body`` fields
    are passed through to the provider as they are: drop it for a provider that rejects
    unknown body fields (the header is harmless everywhere).
    """
    reply = _chat().chat(
        [{"role": "user", "content": entry.input}],
        temperature=COMPONENT_TEMPERATURE,
        max_tokens=COMPONENT_MAX_TOKENS,
        extra_body={"cache_prompt": False},
        extra_headers={"Cache-Control": "no-store"},
    )
    # The tokens the request used, for the trace's Token Usage and the run's tokens_* metrics
    # (with an openai client: call.record_llm_response(client.chat.completions.create(...))).
    call.record_llm_response(reply)
    return reply.text


if __name__ == "__main__":
    raise SystemExit(evalkit.run_eval_script(globals(), invoke_component))
