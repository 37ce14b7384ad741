"""Scoring of pushed hints: does the hint of a question turn already hold its evidence?

A question is asked as the user's next turn after its haystack. Three policies
are compared on the same turns:

- ``triggered``: what memstream pushes. A hit counts only when the trigger
  fired on the question turn AND the hint's recalled items name an evidence
  turn in their lineage.
- ``always``: recall run for every question turn (the same composer, as if the
  trigger always fired): the upper bound of any trigger policy.
- ``one signal``: a counterfactual of the same run, the trigger firing on any
  single signal (``implicit_min_signals`` 1): the always-recall hint counted
  when at least one signal fired on the turn (the hint's recall would be the
  same; only the gate differs).
- ``never``: no hint, so 0 by definition (printed for the table's sake).

The cost is the share of user turns that fire, over every user turn ingested.
This module is pure: no stores, no Kafka, no model.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

POLICIES = ("triggered", "one signal", "always", "never")


def holds_evidence(hit_turns: Iterable[str | None], evidence: set[str]) -> bool:
    """Whether a hint's recalled items (their lineage turn ids) include an evidence turn."""
    return any(turn is not None and turn in evidence for turn in hit_turns)


def wanted_evidence(question_type: str, latest: set[str], outdated: set[str]) -> set[str]:
    """The evidence turns a hint must hold to count as a hit.

    For a knowledge update only the latest value's turns: a hint that holds
    only the old value hands the agent the wrong answer (it counted as a hit
    before stop 32). Any evidence turn otherwise.
    """
    if question_type == "knowledge-update" and latest and outdated:
        return set(latest)
    return latest | outdated


@dataclass
class HintTally:
    """Per question type: question turns, how many fired, how many hints held evidence."""

    asked: Counter[str] = field(default_factory=Counter)
    fired: Counter[str] = field(default_factory=Counter)
    held: dict[str, Counter[str]] = field(
        default_factory=lambda: {policy: Counter() for policy in POLICIES}
    )
    signals: Counter[str] = field(default_factory=Counter)  # on question turns, fired or not
    user_turns: int = 0  # every user turn ingested (haystacks and question turns)
    user_turns_fired: int = 0

    def add_question(
        self,
        question_type: str,
        *,
        fired: bool,
        hint_turns: Sequence[str | None],
        always_turns: Sequence[str | None],
        evidence: set[str],
        signals: Iterable[str] = (),
    ) -> None:
        """One question turn; ``hint_turns`` are ignored when the trigger did not fire."""
        self.asked[question_type] += 1
        self.fired[question_type] += fired
        self.held["triggered"][question_type] += fired and holds_evidence(hint_turns, evidence)
        signals = list(signals)
        always = holds_evidence(always_turns, evidence)
        self.held["always"][question_type] += always
        self.held["one signal"][question_type] += always and bool(signals)
        self.signals.update(signals)

    def add_user_turns(self, turns: int, fired: int) -> None:
        """User turns ingested (any turn, question or haystack) and how many of them fired."""
        if fired > turns or fired < 0:
            raise ValueError(f"{fired} fired of {turns} user turns")
        self.user_turns += turns
        self.user_turns_fired += fired

    def types(self) -> list[str]:
        """The question types seen, sorted."""
        return sorted(self.asked)

    def count(self, question_type: str | None = None) -> int:
        """Question turns of ``question_type`` (None: all)."""
        return self.asked[question_type] if question_type else sum(self.asked.values())

    def share(self, policy: str, question_type: str | None = None) -> float:
        """Share of question turns whose hint under ``policy`` held evidence (NaN: none asked)."""
        n = self.count(question_type)
        if n == 0:
            return math.nan
        counts = self.held[policy]
        held = counts[question_type] if question_type else sum(counts.values())
        return held / n

    def fire_share(self, question_type: str | None = None) -> float:
        """Share of question turns on which the trigger fired."""
        n = self.count(question_type)
        if n == 0:
            return math.nan
        fired = self.fired[question_type] if question_type else sum(self.fired.values())
        return fired / n

    def cost(self) -> float:
        """Share of all user turns ingested that fired a trigger."""
        return self.user_turns_fired / self.user_turns if self.user_turns else math.nan

    def captured(self) -> float:
        """What the trigger keeps of the upper bound: triggered / always."""
        always = self.share("always")
        return self.share("triggered") / always if always else math.nan
