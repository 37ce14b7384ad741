"""CRM webhooks -> authoritative facts: field changes map to predicates, no NLP."""

from __future__ import annotations

import re

from pipelines.vocabulary import default_vocabulary
from schemas.events import CrmWebhook
from schemas.facts import Assertor, ExtractedFact, origin, statement
from schemas.memory import Polarity

SUBJECT = "user"


def extract_crm(webhook: CrmWebhook) -> list[ExtractedFact]:
    """One authoritative fact (confidence 1.0) per changed field.

    A field named by the vocabulary (a predicate or an alias of one, e.g.
    ``preferred_phone``) becomes that predicate, so CRM and dialogue facts land
    on the same version chain; an unknown field keeps its own snake_case name.
    A field cleared to null is a negated fact about its old value.
    """
    vocab = default_vocabulary()
    facts = []
    for name, change in sorted(webhook.changes.items()):
        key = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "field"
        spec = vocab.spec(key)
        predicate = spec.name
        cleared = change.new is None or change.new == ""
        raw = change.old if cleared else change.new
        if raw is None or raw == "" or (cleared and vocab.names_negation(key)):
            continue  # an exclusion lifted says nothing either way
        negated = cleared or vocab.names_negation(key)
        value = spec.normalise(str(raw))
        kind = spec.kind_of(value, negated=negated)
        polarity = Polarity.NEGATED if negated else Polarity.AFFIRMED
        facts.append(
            ExtractedFact(
                **origin(webhook),
                subject=SUBJECT,
                predicate=predicate,
                object=value,
                polarity=polarity,
                kind=kind,
                confidence=1.0,
                text=statement(predicate, value, polarity),
                asserted_by=Assertor.CRM,
                authoritative=True,
                is_update=change.old not in (None, ""),
                fields={predicate.upper(): value},
            )
        )
    return facts
