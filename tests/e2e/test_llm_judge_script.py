"""The LLM judge from an eval script in a process of its own: a wrong key fails the script at
its first request.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.builders import entry, write_dataset, write_eval_script
from tests.support.openai_stub import (
    OpenAIStub,
    status,
)
from tests.support.processes import run_eval


def test_wrong_key_fails_the_script_at_its_first_request(tmp_path: Path) -> None:
    # The process-level promise: exit status 2, no component call, no store created.
    with OpenAIStub(lambda request: status(401)) as stub:
        write_dataset(tmp_path / "ds", {"e": entry("functional")})
        write_eval_script(tmp_path, {"EXPERIMENT_NAME": "judge/key", "DATASET_PATH": "ds",
                                     "EVAL_MIN_ACCURACY": 0.5, "SCORER": "llm_judge",
                                     "JUDGE_MODEL": "stub-judge"}, """
            def invoke_component(entry, call):
                open("called", "w").write("yes")
                return "a"
        """)
        done = run_eval(tmp_path, "--type=all", env={"OPENAI_BASE_URL": stub.base_url,
                                                       "OPENAI_API_KEY": "sk-wrong"},
                          seed_store=False)
    assert done.returncode == 2 and "AuthenticationError 401" in done.stderr
    assert not (tmp_path / "called").exists() and not (tmp_path / "mlflow.db").exists()
    # Fast because nothing waits: one preflight request, a permanent error is not retried.
    assert len(stub.chat_requests()) == 1
