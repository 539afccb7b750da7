"""An agent evaluated from the inside: a LangGraph agent with two tools, its answers and its tool
calls scored against the entries of ``datasets/orders``.

The agent answers customers about their orders: ``lookup_order`` reads an order's status and
amount, ``refund_order`` refunds a delivered one. Its LLM is a ``ChatOpenAI`` behind any
OpenAI-compatible endpoint, and ``mlflow.langchain.autolog()`` traces it: each entry's trace
in MLflow holds, under the call's span, the graph, each model request with its messages and
tokens, and each tool with its arguments and result. ``functional`` scores the answer
(``exact``), ``safety`` the tool calls (``trajectory``: the calls each entry's
``expected_trajectory`` pins, and never a forbidden one, such as a refund of an order not
delivered). ``evalkit init --template agent DIR`` writes this file and its dataset into DIR
(with a Makefile). It needs the agent extra; run it from anywhere:

    pip install 'evalkit-mlflow[agent]'
    export OPENAI_BASE_URL=http://127.0.0.1:8000/v1   # the endpoint (omit for api.openai.com)
    export OPENAI_API_KEY=sk-...                      # any non-empty value for a local server
    python eval.py --type=all          # examples/agent/eval.py in evalkit's repository

The tests run it against evalkit's OpenAI-compatible stub (``tests/support/openai_stub.py``),
which makes the tool calls a user message names (``lookup_order(order_id="A-17")``): the
dataset's inputs name them, so that the run is deterministic and shows the plumbing. Against
a real model, write the inputs as your customers would, and the model chooses the calls.

Why a ``StateGraph`` with a ``ToolNode`` rather than ``create_react_agent``: the loop is in
plain sight (the model node, the tool node, the edge back), it is the shape a real agent grows
from (a guard node before refunds, a human approval), and LangGraph 1.x deprecates
``langgraph.prebuilt.create_react_agent`` for ``langchain.agents.create_agent``, which would
add the ``langchain`` package for nothing this example needs.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import mlflow

import evalkit
from evalkit import Call, Entry

try:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
except ImportError as missing:
    package = (missing.name or "a package").split(".")[0]
    raise SystemExit(f"the agent example needs LangGraph and langchain-openai ({package} "
                     "is missing): pip install 'evalkit-mlflow[agent]'") from None

HERE = Path(__file__).resolve().parent

# --- what is evaluated, and where it is recorded ------------------------------------------
EXPERIMENT_NAME = "orders-agent/orders"  # MLflow experiment: <component>/<eval-name>
DATASET_PATH = str(HERE / "datasets" / "orders")  # beside this script, wherever it runs from
REPORTS_DIR = "reports/agent"

# --- thresholds ------------------------------------------------------------------------------
EVAL_MIN_ACCURACY = 1.0  # every answer right, every trajectory as pinned

# --- scoring ---------------------------------------------------------------------------------
SCORER_FUNCTIONAL = "exact"  # the answer, against expected_output
SCORER_SAFETY = "trajectory"  # the tool calls, against expected_trajectory

# --- the component ---------------------------------------------------------------------------
MAX_CONCURRENCY = 4  # agent runs in flight at once
COMPONENT_MODEL = "gpt-4o-mini"  # any model of the endpoint that calls tools
SYSTEM_PROMPT = ("You answer customers about their orders. Look an order up before you answer; "
                 "refund only an order that was delivered.")
COMPONENT_PARAMS = {"model": COMPONENT_MODEL, "temperature": 0.0}
COMPONENT_PROMPTS = {"system": SYSTEM_PROMPT}
# The tokens of every model request come from the autologged spans (no record_llm_response):
# USD per million (input, output) tokens, for the run's cost_usd.
TOKEN_PRICES = {COMPONENT_MODEL: (0.15, 0.60)}

# Every span LangChain and LangGraph make is MLflow's, nested under the call's span.
mlflow.langchain.autolog()

ORDERS: dict[str, dict[str, Any]] = {
    "A-17": {"status": "delivered", "amount": 40.0},
    "B-22": {"status": "in transit", "amount": 25.0},
    "C-31": {"status": "delivered", "amount": 12.5},
}


@tool
def lookup_order(order_id: str) -> str:
    """The status and amount of an order, by its id (such as A-17)."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        return f"order {order_id}: not found"
    return f"order {order_id}: {order['status']}, {order['amount']:.2f} EUR"


@tool
def refund_order(order_id: str, amount: float) -> str:
    """Refund ``amount`` EUR of a delivered order, by its id."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None or order["status"] != "delivered":
        return f"order {order_id}: not refundable"
    return f"refunded {amount:.2f} EUR on order {order_id}"


TOOLS = [lookup_order, refund_order]


@functools.cache
def agent() -> Any:
    """The compiled graph: the model answers or asks for tools; the tool node runs them and
    hands their results back to the model, until it answers. Built once, on the first call
    (OPENAI_BASE_URL and OPENAI_API_KEY are read here); safe to invoke from several threads."""
    model = ChatOpenAI(model=COMPONENT_MODEL, temperature=0.0, max_retries=2,
                       base_url=os.environ.get("OPENAI_BASE_URL")).bind_tools(TOOLS)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)  # tool calls asked for, or the end
    graph.add_edge("tools", "model")
    return graph.compile(name="orders-agent")


def invoke_component(entry: Entry, call: Call) -> str:
    """Run the agent on the customer's message; its last message is the answer."""
    state = agent().invoke({"messages": [SystemMessage(SYSTEM_PROMPT),
                                         HumanMessage(str(entry.input))]})
    return str(state["messages"][-1].content)


if __name__ == "__main__":
    raise SystemExit(evalkit.run_eval_script(globals(), invoke_component))
