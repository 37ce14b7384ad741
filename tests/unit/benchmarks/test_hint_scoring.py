"""benchmarks/hint_scoring.py: when a pushed hint counts as holding the evidence, and the shares."""

from __future__ import annotations

import math

import pytest

from benchmarks.hint_scoring import HintTally, holds_evidence, wanted_evidence


def test_holds_evidence_needs_an_evidence_turn_among_the_hits() -> None:
    assert holds_evidence(["s1:0", None, "s2:3"], {"s2:3"})
    assert not holds_evidence(["s1:0", None, "ask"], {"s2:3"})
    assert not holds_evidence([], {"s2:3"})
    assert not holds_evidence([None], set())


def test_a_knowledge_update_hint_must_hold_the_latest_value() -> None:
    latest, outdated = {"s3:1"}, {"s1:4"}
    wanted = wanted_evidence("knowledge-update", latest, outdated)
    assert not holds_evidence(["s1:4", "s2:0"], wanted)  # only the old value
    assert holds_evidence(["s1:4", "s3:1"], wanted)
    # Evidence in one session only, or another question type: any evidence turn.
    assert wanted_evidence("knowledge-update", latest, set()) == latest
    assert wanted_evidence("multi-session", latest, outdated) == latest | outdated


def test_a_hint_counts_only_when_the_trigger_fired() -> None:
    tally = HintTally()
    evidence = {"s1:2"}
    # Fired, evidence recalled: counts for both policies.
    tally.add_question(
        "multi-session",
        fired=True,
        hint_turns=["s1:2"],
        always_turns=["s1:2"],
        evidence=evidence,
        signals=["memory_cue"],
    )
    # Not fired: the hint's turns must not count, even if they name evidence.
    tally.add_question(
        "multi-session", fired=False, hint_turns=["s1:2"], always_turns=["s1:2"], evidence=evidence
    )
    # Fired, but recall missed the evidence.
    tally.add_question(
        "knowledge-update",
        fired=True,
        hint_turns=["s0:1"],
        always_turns=["s0:1"],
        evidence=evidence,
        signals=["semantic_shift", "undefined_entity"],
    )
    # Not fired, and always-recall misses it too.
    tally.add_question(
        "knowledge-update", fired=False, hint_turns=[], always_turns=[None], evidence=evidence
    )
    assert tally.types() == ["knowledge-update", "multi-session"]
    assert tally.count() == 4
    assert tally.share("triggered", "multi-session") == 0.5
    assert tally.share("always", "multi-session") == 1.0
    assert tally.share("triggered", "knowledge-update") == 0.0
    assert tally.share("triggered") == 0.25
    assert tally.share("always") == 0.5
    assert tally.share("never") == 0.0
    # The one-signal counterfactual: always-recall's hit, where any signal fired.
    assert tally.share("one signal", "multi-session") == 0.5
    assert tally.share("one signal", "knowledge-update") == 0.0
    assert tally.fire_share() == 0.5
    assert tally.captured() == 0.5
    assert tally.signals["semantic_shift"] == 1
    assert tally.signals["memory_cue"] == 1
    assert math.isnan(tally.share("triggered", "single"))


def test_cost_is_fired_user_turns_over_all_user_turns() -> None:
    tally = HintTally()
    assert math.isnan(tally.cost())
    tally.add_user_turns(30, 2)
    tally.add_user_turns(10, 2)
    assert tally.cost() == pytest.approx(0.1)
    with pytest.raises(ValueError, match="fired"):
        tally.add_user_turns(1, 2)
