"""CRM webhooks -> authoritative facts: field changes map to predicates, no NLP."""

from __future__ import annotations

import re

from pipelines.extract import vocabulary as vocab
from schemas.events import CrmWebhook
from schemas.facts import Assertor, ExtractedFact
from schemas.memory import MemoryKind, Polarity

SUBJECT = "user"
# CRM field names (lower-cased, any of these spellings) -> our predicate.
CRM_FIELDS: dict[str, str] = {
    "phone": "phone_number",
    "phone_number": "phone_number",
    "mobile": "phone_number",
    "email": "email",
    "email_address": "email",
    "address": "address",
    "street_address": "address",
    "city": "address",
    "plan": "plan",
    "tariff": "plan",
    "subscription": "plan",
    "payment_method": "payment_method",
    "preferred_channel": "contact_channel",
    "contact_channel": "contact_channel",
    "order_status": "order_status",
    "status": "order_status",
    "diet": "diet",
    "installation_date": "installation_time",
    "delivery_date": "delivery_time",
}


def _canonical(predicate: str, value: str) -> str:
    if predicate == "phone_number":
        return vocab.canonical_phone(value)
    if predicate == "address":
        return vocab.canonical_place(value)
    if predicate.endswith("_time"):
        return vocab.canonical_time(value)
    return " ".join(value.lower().split())


def extract_crm(webhook: CrmWebhook) -> list[ExtractedFact]:
    """One authoritative fact (confidence 1.0) per changed field.

    A known field keeps our predicate vocabulary so CRM and dialogue facts land
    on the same version chain; an unknown field keeps its own snake_case name.
    A field cleared to null is a negated fact about its old value.
    """
    facts = []
    for name, change in sorted(webhook.changes.items()):
        key = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "field"
        predicate = CRM_FIELDS.get(key, key)
        cleared = change.new is None or change.new == ""
        raw = change.old if cleared else change.new
        if raw is None or raw == "":
            continue
        value = _canonical(predicate, str(raw))
        kind = vocab.PREDICATES.get(predicate, MemoryKind.FACT)
        facts.append(
            ExtractedFact(
                tenant_id=webhook.tenant_id,
                user_id=webhook.user_id,
                event_id=webhook.event_id,
                event_ts=webhook.ts,
                subject=SUBJECT,
                predicate=predicate,
                object=value,
                polarity=Polarity.NEGATED if cleared else Polarity.AFFIRMED,
                kind=kind,
                confidence=1.0,
                text=f"{predicate} {'NOT ' if cleared else ''}{value}",
                asserted_by=Assertor.CRM,
                authoritative=True,
                is_update=change.old not in (None, ""),
                fields={predicate.upper(): value},
            )
        )
    return facts
