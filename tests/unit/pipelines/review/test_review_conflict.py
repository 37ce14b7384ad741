"""Stage 3, conflict: versions, negation flips, repeats and near-duplicate merges."""

from __future__ import annotations

from review_helpers import DAY, T0, Feed, fact, of, record, types, vec

from pipelines.review.conflict import cosine
from schemas.memory import Polarity
from schemas.ops import OpType


def test_phone_number_change_keeps_both_versions_with_validity() -> None:
    feed = Feed()
    # The extract stage's form: (phone_number, is, value).
    first = record(feed.say("e1", fact("e1", "is", "+1 555 0100", subject="phone_number"))[1])
    fix = fact("e2", "is", "+1 555 0199", subject="phone_number", is_update=True)
    ops = feed.say("e2", fix, ts=T0 + 3 * DAY)

    assert types(ops) == ["append_turn", "close_fact", "upsert_fact"]
    closed, new = record(ops[1]), record(ops[2])
    assert closed.fact_id == first.fact_id
    assert closed.object == "+1 555 0100"
    assert (closed.valid_from, closed.valid_until) == (T0, T0 + 3 * DAY)
    assert new.object == "+1 555 0199"
    assert (new.version, new.supersedes, new.valid_until) == (2, first.fact_id, None)
    assert new.chain_id == first.chain_id
    # "Which phone numbers do you have?": the old one until the change, the new one now.
    assert closed.is_current(T0 + DAY) and not closed.is_current(T0 + 4 * DAY)
    assert new.is_current(T0 + 4 * DAY) and not new.is_current(T0 + DAY)
    assert [h.object for h in feed.current(T0 + 4 * DAY)] == ["+1 555 0199"]


def test_cilantro_negation_flip_is_a_version_change() -> None:
    feed = Feed()
    dont = fact("e1", "eats", "cilantro", polarity=Polarity.NEGATED, text="I don't eat cilantro")
    first = record(of(feed.say("e1", dont), OpType.UPSERT_FACT)[0])
    would = fact("e2", "eats", "cilantro", text="actually I'd try cilantro now")
    ops = feed.say("e2", would, ts=T0 + 10 * DAY)

    assert types(ops) == ["append_turn", "close_fact", "upsert_fact"]
    closed, new = record(ops[1]), record(ops[2])
    assert closed.polarity is Polarity.NEGATED and closed.valid_until == T0 + 10 * DAY
    assert new.polarity is Polarity.AFFIRMED
    assert (new.version, new.supersedes) == (2, first.fact_id)
    conflict = [r for r in new.review if r.stage == "conflict"][0]
    assert conflict.decision == "new_version" and "negation flip" in conflict.reason


def test_exact_repeat_raises_confirmations_instead_of_a_version() -> None:
    feed = Feed()
    first = record(feed.say("e1", fact("e1", "city", "Lyon"))[1])
    ops = feed.say("e2", fact("e2", "city", "lyon"), ts=T0 + DAY)

    assert types(ops) == ["append_turn", "upsert_fact"]
    again = record(ops[1])
    assert again.fact_id == first.fact_id
    assert again.version == 1
    assert (again.confirmations, again.confirmed_by) == (2, ["e1", "e2"])
    assert feed.state.counters["repeat"] == 1


def test_near_duplicate_merges_recording_merged_from_and_merged_at() -> None:
    feed = Feed()
    first = record(feed.say("e1", fact("e1", "home", "New York City"), encodings=[vec(1.0)])[1])
    ops = feed.say("e2", fact("e2", "home", "NYC"), ts=T0 + DAY, encodings=[vec(0.9)])

    assert types(ops) == ["append_turn", "upsert_fact"]
    merged = record(ops[1])
    assert merged.fact_id == first.fact_id and merged.object == "New York City"
    assert merged.merged_at == T0 + DAY
    assert len(merged.merged_from) == 1 and merged.merged_from[0] != first.fact_id
    assert merged.confirmations == 2


def test_cosine_at_the_threshold_is_not_a_duplicate() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "home", "New York City"), encodings=[vec(1.0)])
    ops = feed.say("e2", fact("e2", "home", "Newark"), ts=T0 + DAY, encodings=[vec(0.85)])

    assert abs(cosine(vec(1.0).text, vec(0.85).text) - 0.85) < 1e-12
    assert types(ops) == ["append_turn", "close_fact", "upsert_fact"]
    assert record(ops[2]).version == 2


def test_similar_text_with_different_numbers_is_a_new_value_not_a_merge() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "phone_number", "555 0100"), encodings=[vec(1.0)])
    ops = feed.say("e2", fact("e2", "phone_number", "555 0199"), ts=T0 + DAY, encodings=[vec(0.99)])

    assert types(ops) == ["append_turn", "close_fact", "upsert_fact"]


def test_a_correction_is_never_merged_away() -> None:
    feed = Feed()
    feed.say("e1", fact("e1", "home", "New York City"), encodings=[vec(1.0)])
    fix = fact("e2", "home", "NYC, Brooklyn", is_update=True)
    ops = feed.say("e2", fix, ts=T0 + DAY, encodings=[vec(0.95)])

    assert types(ops) == ["append_turn", "close_fact", "upsert_fact"]


def test_values_with_exact_structured_fields_are_never_merged() -> None:
    feed = Feed()
    monday = fact("e1", "in", "monday", subject="installation_time", fields={"TIME": "monday"})
    feed.say("e1", monday, encodings=[vec(1.0)])
    tuesday = fact("e2", "in", "tuesday", subject="installation_time", fields={"TIME": "tuesday"})
    ops = feed.say("e2", tuesday, ts=T0 + DAY, encodings=[vec(0.95)])

    assert types(ops) == ["append_turn", "close_fact", "upsert_fact"]


def test_multi_valued_predicates_keep_one_chain_per_object() -> None:
    feed = Feed()
    cilantro = record(feed.say("e1", fact("e1", "likes", "cilantro"))[1])
    sushi = record(feed.say("e2", fact("e2", "likes", "sushi"), ts=T0 + DAY)[1])

    assert cilantro.chain_id != sushi.chain_id
    assert sushi.version == 1
    assert {h.object for h in feed.current(T0 + DAY)} == {"cilantro", "sushi"}


def test_an_event_moved_to_a_new_date_is_a_new_version_and_other_events_stay() -> None:
    feed = Feed()
    first = record(feed.say("e1", fact("e1", "event", "brother's wedding 14 june"))[1])
    party = record(feed.say("e2", fact("e2", "event", "christmas party"), ts=T0 + DAY)[1])
    moved = fact("e3", "event", "brother's wedding 20 june", is_update=True)
    ops = feed.say("e3", moved, ts=T0 + 2 * DAY)

    assert types(ops) == ["append_turn", "close_fact", "upsert_fact"]
    closed, new = record(ops[1]), record(ops[2])
    assert closed.fact_id == first.fact_id and new.chain_id == first.chain_id
    assert (new.version, new.supersedes) == (2, first.fact_id)
    now = {h.object for h in feed.current(T0 + 3 * DAY)}
    assert now == {"brother's wedding 20 june", "christmas party"}
    assert party.chain_id != first.chain_id
