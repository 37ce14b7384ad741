"""Tunable numbers of behaviour memory, with where each default came from.

``BehaviourConfig`` is a frozen pydantic model so that memstream/settings.py
can embed it as a section (``MEMSTREAM_BEHAVIOUR__MIN_VIEWS=4``); the stage
takes it as a plain argument and never reads the environment.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class BehaviourConfig(BaseModel):
    """Window, thresholds and caps of the behaviour stage (docs/predictive.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Issue 16's example item reads "in the last 24 h": a day holds a shopping
    # session and the return visit the same evening, and forgets last week's.
    window: timedelta = timedelta(hours=24)
    # One view is browsing and two can be a back button; a third deliberate
    # return to the same target is the first count that reads as interest.
    min_views: int = Field(default=3, ge=1)
    # One view's dwell above this is an idle tab, not attention: counted at the
    # cap (the view still counts) and the clamp recorded. Half an hour is longer
    # than anyone reads a product page or an FAQ.
    max_dwell: timedelta = timedelta(minutes=30)
    # Total dwell on a target from which the interest is read as stronger (a
    # confidence bonus): two minutes is reading, not skimming, a page.
    dwell_interest: timedelta = timedelta(minutes=2)
    # ttl = base_ttl × (1 + confidence), as every status fact (docs/architecture.md,
    # timeliness). One day is the review's own default for a status without a
    # rule (pipelines/review/config.py), so both give a behaviour item one life.
    base_ttl: timedelta = timedelta(days=1)
    # Searches further apart than this are separate errands: their terms may
    # overlap by chance ("earphones" in the morning, "earphone case" at night).
    drift_max_gap: timedelta = timedelta(minutes=30)
    # Consecutive searches that share at least this many terms (and are not the
    # same search) refine one another: "wireless earphones" -> "noise-cancelling
    # earphone reviews" share one.
    drift_min_shared_terms: int = Field(default=1, ge=1)
    # Events kept per user in the window; the oldest go first and are counted
    # (``evicted``, a metric). ~300 bytes of JSON each, so 512 is ~150 KB of state.
    max_events: int = Field(default=512, ge=1)
    # Event ids remembered to ignore redeliveries, also of events evicted or
    # expired from the window: four times the window cap, ~100 KB of ids.
    max_seen_ids: int = Field(default=2048, ge=1)
    # A search is a few words; longer text is pasted and is cut here, recorded.
    max_query_chars: int = Field(default=200, ge=1)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.window <= timedelta(0) or self.base_ttl <= timedelta(0):
            raise ValueError("window and base_ttl must be positive")
        if self.max_dwell <= timedelta(0) or self.drift_max_gap <= timedelta(0):
            raise ValueError("max_dwell and drift_max_gap must be positive")
        if self.max_seen_ids < self.max_events:
            raise ValueError("max_seen_ids must cover max_events: a kept event's id is known")
        return self
