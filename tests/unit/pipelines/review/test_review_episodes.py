"""The episodes stage after the review: the turn's episode, and the turns it outdates."""

from __future__ import annotations

from review_helpers import DAY, T0, Feed, fact

from pipelines.episodes import episode_ops
from schemas.ids import episode_id
from schemas.ops import OpType


def test_episode_ops_follow_the_review_and_outdate_the_superseded_turn() -> None:
    feed = Feed()
    first_ops = feed.say("e1", fact("e1", "is", "+1 555 0100", subject="phone_number"))
    assert feed.last is not None
    event, lineage, _ = feed.last
    first = episode_ops(feed.state, event, lineage, first_ops)
    (written,) = first
    assert written.op_type is OpType.UPSERT_EPISODE and written.episode is not None
    assert written.episode.fact_ids == [first_ops[1].record.fact_id]  # type: ignore[union-attr]
    assert written.op_id not in {op.op_id for op in first_ops}

    fix = fact("e2", "is", "+1 555 0199", subject="phone_number", is_update=True)
    second_ops = feed.say("e2", fix, ts=T0 + 3 * DAY)
    event, lineage, _ = feed.last
    second = episode_ops(feed.state, event, lineage, second_ops)
    assert [op.op_type for op in second] == [OpType.UPSERT_EPISODE, OpType.OUTDATE_EPISODE]
    assert second[1].target_fact_id == episode_id("acme", "u1", "e1")
    assert second[0].episode is not None
    assert second[1].superseded_by == second[0].episode.episode_id
    # The second turn is short enough to carry the first as its context.
    assert second[0].episode is not None and second[0].episode.context is not None
