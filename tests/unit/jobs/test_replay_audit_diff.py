"""The audit diff over two user dumps: what counts as a difference, and how it is reported."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from connectors.namespace_dump import UserDump
from jobs.ops.audit_diff import ONLY_LIVE, ONLY_SHADOW, AuditResult, diff_user, fact_label, summary


def version(fact_id: str, obj: str, **extra: Any) -> dict[str, Any]:
    return {
        "fact_id": fact_id,
        "subject": "installation",
        "predicate": "on_day",
        "object": obj,
        "polarity": "affirmed",
        "version": 1,
        "valid_until": None,
        **extra,
    }


BASE = UserDump(
    tenant_id="acme",
    user_id="u1",
    episodic={"f1": version("f1", "monday"), "f2": version("f2", "friday", version=2)},
    semantic={"f1": version("f1", "monday")},
    pending={"p1": version("p1", "tuesday")},
    resolved={"p0": "confirmed"},
    statuses={"mood": "happy"},
    turns={"s1": [{"turn_index": 3, "text": "hi"}, {"turn_index": 4, "text": "bye"}]},
)


def test_equal_dumps_have_no_difference() -> None:
    assert diff_user(BASE, replace(BASE)) == []


def test_versions_on_one_side_only() -> None:
    shadow = replace(BASE, episodic={"f1": BASE.episodic["f1"], "f9": version("f9", "sunday")})
    found = diff_user(BASE, shadow)
    assert [(d.store, d.item, d.what) for d in found] == [
        ("episodic", "installation on_day friday v2", ONLY_LIVE),
        ("episodic", "installation on_day sunday v1", ONLY_SHADOW),
    ]
    assert found[0].live == BASE.episodic["f2"] and found[0].shadow is None


def test_changed_fields_are_listed_one_row_each() -> None:
    closed = version("f1", "monday", valid_until="2026-03-03T00:00:00+00:00", polarity="negated")
    found = diff_user(BASE, replace(BASE, semantic={"f1": closed}))
    assert [(d.store, d.what, d.live, d.shadow) for d in found] == [
        ("semantic", "polarity differs", "affirmed", "negated"),
        ("semantic", "valid_until differs", None, "2026-03-03T00:00:00+00:00"),
    ]
    assert found[0].item == "installation on_day monday v1"  # named as live memory has it


def test_pending_resolutions_statuses_and_turns() -> None:
    shadow = replace(
        BASE,
        pending={},
        resolved={"p0": "rejected"},
        statuses={"mood": "angry", "project": "x"},
        turns={"s1": [{"turn_index": 3, "text": "hi"}]},
    )
    found = [(d.store, d.item, d.what, d.live, d.shadow) for d in diff_user(BASE, shadow)]
    assert found == [
        ("pending", "installation on_day tuesday v1", ONLY_LIVE, BASE.pending["p1"], None),
        ("resolved", "p0", "value differs", "confirmed", "rejected"),
        ("status", "mood", "value differs", "happy", "angry"),
        ("status", "project", ONLY_SHADOW, None, "x"),
        ("turn", "session s1 turn #4", ONLY_LIVE, {"turn_index": 4, "text": "bye"}, None),
    ]


def test_fact_label_renders_negation() -> None:
    assert fact_label(version("f", "weekend", polarity="negated")) == (
        "installation NOT on_day weekend v1"
    )


def test_result_json_and_summary() -> None:
    differences = diff_user(BASE, replace(BASE, statuses={}))
    result = AuditResult("shadow1", "", [("acme", "u1"), ("acme", "u2")], differences)
    document = json.loads(result.to_json())
    assert document["equal"] is False
    assert document["users"] == [
        {"tenant_id": "acme", "user_id": "u1"},
        {"tenant_id": "acme", "user_id": "u2"},
    ]
    assert document["differences"] == [
        {
            "tenant_id": "acme",
            "user_id": "u1",
            "store": "status",
            "item": "mood",
            "what": ONLY_LIVE,
            "live": "happy",
            "shadow": None,
        }
    ]
    assert summary(result) == "2 user(s) compared: 1 difference(s) for 1 user(s)"
    assert summary(AuditResult("s", "", [("acme", "u1")], [])) == (
        "1 user(s) compared: no difference"
    )
