"""Tunable numbers of the retrieval triggers, with where each default came from.

``TriggerConfig`` is a frozen pydantic model so that memstream/settings.py can
embed it as a section (``MEMSTREAM_TRIGGERS__SEMANTIC_MAX_COSINE=0.2``); the
stage takes it as a plain argument and never reads the environment.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TriggerConfig(BaseModel):
    """Thresholds and state caps of the retrieval-trigger stage (docs/predictive.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The seed paper: two implicit signals firing together trigger; one alone is
    # too common (an intent change or a date happens in most conversations).
    implicit_min_signals: int = Field(default=2, ge=1)
    # A user turn whose MiniLM cosine to the session's centroid is below this is
    # "far from the session so far". On the sample stream (81 user turns with at
    # least two content turns before them) the cosines spread 0.06-0.60, median
    # 0.30, tenth percentile 0.149: 0.15 flags about the farthest tenth.
    semantic_max_cosine: float = Field(default=0.15, ge=-1.0, le=1.0)
    # A centroid of fewer content turns is one or two sentences, not a session:
    # the second turn of a conversation is always "far" from the greeting-free first.
    semantic_min_turns: int = Field(default=2, ge=1)
    # Constraint markers (negations, limits, numbers, times) in one turn; 3 is
    # "several": "Monday at 2 pm" alone is two, a plain request has none or one.
    constraint_min_markers: int = Field(default=3, ge=1)
    # Score of strong negative emotion: one lexicon word is 1 ("disappointed"),
    # an intensifier adds 0.5, "!!", shouting or a complaint add 1 / 1 / 0.5;
    # 2 needs a second cue, so a mild "sadly" or "annoying" never fires alone.
    negative_emotion_min_score: float = Field(default=2.0, gt=0.0)
    # Terms the session has mentioned, kept per session (oldest forgotten first):
    # a support chat of 40 turns mentions ~150 distinct content words.
    max_known_terms: int = Field(default=256, ge=1)
    # Sessions kept per user, as the review state keeps the dialogue context of 16.
    max_sessions: int = Field(default=16, ge=1)
    # Decisions remembered per session so a redelivered turn gets its first
    # decision back without changing the state. An older redelivery is still
    # safe: its index is at or before the session's last, so it is ``stale``,
    # fires nothing and changes nothing. 16 sessions × 16 decisions is ~70 KB of
    # a user's ~170 KB state with 384-d MiniLM centroids.
    max_recent_decisions: int = Field(default=16, ge=1)
