"""The judge's prompts in MLflow's prompt registry, linked to the runs that used them.

The YAML files in ``evalkit/prompts/`` (or ``JUDGE_PROMPTS``) stay the source; the registry
holds a copy per prompt name, in MLflow's ``{{variable}}`` form, with a new version only when
the content changes (found by the ``evalkit.sha256`` tag of the latest version).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

SHA_TAG = "evalkit.sha256"


def register_prompts(client: Any, run_id: str,
                     prompts: Mapping[str, Sequence[Mapping[str, str]]]) -> list[str]:
    """Register each chat template (name -> messages) unless its latest version holds the same
    content, link that version to the run, and return the versions' URIs."""
    uris = []
    for name, messages in sorted(prompts.items()):
        template = [dict(m) for m in messages]
        sha = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
        latest = client.load_prompt(f"prompts:/{name}@latest", allow_missing=True)
        if latest is None or latest.tags.get(SHA_TAG) != sha:
            latest = client.register_prompt(
                name=name, template=template, tags={SHA_TAG: sha},
                commit_message=f"evalkit: content sha256 {sha[:16]}")
        client.link_prompt_version_to_run(run_id, latest)
        uris.append(latest.uri)
    return uris
