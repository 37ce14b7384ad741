"""The per-user recall index over plain items: BM25, vectors, validity, dedupe, pending."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from pipelines.recall_index import IndexItem, ItemKind, UserIndex, in_first_person, stem, terms
from pipelines.time_focus import Order, TimeFocus, time_focus

NOW = datetime(2027, 6, 1, 12, tzinfo=UTC)
DIM = 8


def vec(*hot: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    for i in hot:
        v[i] = 1.0
    return v


def episode(item_id: str, text: str, days_ago: float = 1, **kw: object) -> IndexItem:
    return IndexItem(item_id, ItemKind.EPISODE, text, NOW - timedelta(days=days_ago), **kw)  # type: ignore[arg-type]


def fact(item_id: str, text: str, days_ago: float = 1, **kw: object) -> IndexItem:
    return IndexItem(item_id, ItemKind.FACT, text, NOW - timedelta(days=days_ago), **kw)  # type: ignore[arg-type]


def ids(hits: list) -> list[str]:
    return [h.item.item_id for h in hits]


def test_terms_drop_stop_words_and_stem() -> None:
    assert terms("I booked the vets for Fridays") == ["book", "vet", "friday"]
    assert stem("glasses") == "glass"
    assert "not" in terms("I do not want calls")


def test_bm25_finds_the_turn_with_the_question_words() -> None:
    index = UserIndex(DIM)
    index.upsert(episode("e1", "my dog Biscuit hates the vet"), vec(0))
    index.upsert(episode("e2", "we went hiking in the lake district"), vec(1))
    index.upsert(episode("e3", "the weather was lovely"), vec(2))
    hits = index.search("what is the name of my dog?", vec(5), at=NOW, k=2)
    assert ids(hits)[0] == "e1"
    assert hits[0].keyword > 0 and hits[0].vector == 0


def test_vector_similarity_ranks_a_paraphrase_without_shared_words() -> None:
    index = UserIndex(DIM)
    index.upsert(episode("e1", "puppy adopted last month"), vec(0, 1))
    index.upsert(episode("e2", "bought a new car"), vec(3))
    assert ids(index.search("new pet?", vec(0), at=NOW, k=1)) == ["e1"]


def test_items_not_valid_at_the_recall_moment_are_left_out() -> None:
    index = UserIndex(DIM)
    index.upsert(
        fact("old", "phone number 111", days_ago=10, valid_until=NOW - timedelta(days=2)), vec(0)
    )
    index.upsert(fact("new", "phone number 222", days_ago=2), vec(0))
    index.upsert(episode("future", "phone number 333", days_ago=-1), vec(0))
    assert ids(index.search("phone number", vec(0), at=NOW, k=5)) == ["new"]
    history = index.search("phone number", vec(0), at=NOW, k=5, include_history=True)
    assert set(ids(history)) == {"old", "new"}


def test_an_outdated_episode_ranks_just_below_the_one_holding_the_newer_value() -> None:
    index = UserIndex(DIM)
    # The outdated turn matches the query better on its own...
    old = episode(
        "was",
        "I live in Glasgow, Glasgow flat",
        days_ago=20,
        outdated=True,
        outdated_by=frozenset({"now"}),
    )
    index.upsert(old, vec(0))
    index.upsert(episode("now", "moved to Edinburgh last month", days_ago=2), vec(0))
    index.upsert(episode("other", "I like Glasgow's music scene", days_ago=3), vec(1))
    hits = index.search("where do I live, Glasgow?", vec(0), at=NOW, k=3)
    assert ids(hits)[:2] == ["now", "was"]  # ...but the current value comes first


def test_a_terse_update_that_half_matches_the_question_still_comes_first() -> None:
    # "sold her, bought a Moody 346" matches "what boat do I keep here?" about
    # half as well as the turn it outdated, which named the boat at length.
    index = UserIndex(DIM)
    was = episode(
        "was",
        "my boat is Curlew, a Westerly, 26 foot",
        days_ago=60,
        outdated=True,
        outdated_by=frozenset({"now"}),
    )
    index.upsert(was, vec(0))
    index.upsert(episode("now", "sold her, bought a Moody 346", days_ago=5), vec(0, 1, 2))
    index.upsert(episode("other", "the marina office shuts at six", days_ago=5), vec(3))
    hits = index.search("what boat do I keep here?", vec(0), at=NOW, k=3)
    assert ids(hits) == ["now", "was", "other"]


def test_an_outdated_turn_about_something_else_keeps_its_rank() -> None:
    index = UserIndex(DIM)
    was = episode(
        "was",
        "my locker code is 1234 and my dog is Rex",
        outdated=True,
        outdated_by=frozenset({"now"}),
    )
    index.upsert(was, vec(0))
    index.upsert(episode("now", "new locker code 9876"), vec(5))
    index.upsert(episode("walks", "I walk Rex every morning"), vec(0, 1))
    hits = index.search("what is my dog called, Rex?", vec(0), at=NOW, k=2)
    assert ids(hits) == ["was", "walks"]  # the newer locker code says nothing about the dog


def test_an_outdated_item_without_a_known_successor_keeps_its_score() -> None:
    index = UserIndex(DIM)
    index.upsert(episode("was", "my locker code is 1234", outdated=True), vec(0))
    assert ids(index.search("locker code", vec(0), at=NOW, k=1)) == ["was"]


def test_a_fact_and_its_source_episode_take_one_slot() -> None:
    index = UserIndex(DIM)
    index.upsert(episode("e1", "please call me on 07700 900123"), vec(0))
    index.upsert(fact("f1", "user phone number 07700900123", source_id="e1"), vec(0))
    index.upsert(episode("e2", "call me after six"), vec(0))
    hits = index.search("call me phone", vec(0), at=NOW, k=3)
    assert ids(hits).count("f1") == 1 and "e1" not in ids(hits)
    (the_fact,) = [h for h in hits if h.item.item_id == "f1"]
    assert the_fact.source is not None and the_fact.source.item_id == "e1"


def test_pending_items_never_push_committed_ones_out() -> None:
    index = UserIndex(DIM)
    for i in range(3):
        index.upsert(fact(f"p{i}", "delivery friday friday friday", pending=True), vec(0))
    index.upsert(episode("c1", "delivery on friday please"), vec(1))
    index.upsert(episode("c2", "delivery address is 5 elm road"), vec(1))
    hits = index.search("delivery friday", vec(0), at=NOW, k=2)
    assert ids(hits) == ["c1", "c2"]
    more = index.search("delivery friday", vec(0), at=NOW, k=4)
    assert ids(more)[:2] == ["c1", "c2"] and all(h.item.pending for h in more[2:])


def test_time_words_boost_the_window() -> None:
    index = UserIndex(DIM)
    index.upsert(
        episode(
            "may", "went to the concert", days_ago=(NOW - datetime(2027, 5, 10, tzinfo=UTC)).days
        ),
        vec(0),
    )
    index.upsert(
        episode(
            "jan", "went to the concert", days_ago=(NOW - datetime(2027, 1, 10, tzinfo=UTC)).days
        ),
        vec(0),
    )
    focus = time_focus("which concert did I go to in January?", NOW)
    assert focus is not None and focus.contains(datetime(2027, 1, 10, tzinfo=UTC))
    assert ids(index.search("concert", vec(0), at=NOW, k=1, focus=focus)) == ["jan"]


def test_first_and_now_order_by_age() -> None:
    index = UserIndex(DIM)
    index.upsert(episode("a", "my job is nurse", days_ago=100), vec(0))
    index.upsert(episode("b", "my job is teacher", days_ago=5), vec(0))
    first = time_focus("what was my first job?", NOW)
    now = time_focus("what is my job now?", NOW)
    assert first is not None and first.order is Order.EARLIEST
    assert now is not None and now.order is Order.LATEST
    assert ids(index.search("job", vec(0), at=NOW, k=1, focus=first)) == ["a"]
    assert ids(index.search("job", vec(0), at=NOW, k=1, focus=now)) == ["b"]


def test_asking_for_the_current_state_puts_the_newest_close_match_first() -> None:
    index = UserIndex(DIM)
    # The turn that introduced the topic matches the question's words best...
    index.upsert(episode("may", "the wedding is booked, wedding on 12 May", days_ago=40), vec(0))
    index.upsert(episode("june", "it got moved to June", days_ago=3), vec(0, 1))
    index.upsert(episode("cat", "the cat is fine", days_ago=1), vec(4))  # not close: stays last
    now = time_focus("when is the wedding now?", NOW)
    assert now is not None and now.order is Order.LATEST
    assert ids(index.search("when is the wedding now?", vec(0), at=NOW, k=3, focus=now)) == [
        "june",
        "may",
        "cat",
    ]
    # ...and without a word asking for now, it keeps its place.
    assert ids(index.search("when is the wedding?", vec(0), at=NOW, k=3))[0] == "may"


def test_remove_and_replace_keep_the_index_consistent() -> None:
    index = UserIndex(DIM)
    for i in range(40):  # past the initial capacity
        index.upsert(episode(f"e{i}", f"note number {i} about gardening"), vec(i % DIM))
    index.remove("e3")
    index.upsert(episode("e4", "totally about sailing now"), vec(1))
    assert len(index) == 39 and "e3" not in index
    assert ids(index.search("sailing", vec(1), at=NOW, k=1)) == ["e4"]
    assert "e3" not in ids(index.search("gardening", vec(3), at=NOW, k=50))


def test_time_focus_windows() -> None:
    at = datetime(2027, 6, 15, tzinfo=UTC)
    last_week = time_focus("what did I do last week", at)
    assert last_week is not None and last_week.contains(at - timedelta(days=5))
    assert not last_week.contains(at - timedelta(days=30))
    may = time_focus("the trip in May", at)
    assert may is not None and may.contains(datetime(2027, 5, 20, tzinfo=UTC))
    december = time_focus("in December", at)  # the last December before the recall moment
    assert december is not None and december.contains(datetime(2026, 12, 5, tzinfo=UTC))
    ago = time_focus("two weeks ago", at)
    assert ago is not None and ago.contains(at - timedelta(days=14))
    assert time_focus("what's the name of my dog", at) is None
    assert time_focus("may I ask what my number is", at) is None
    couple = time_focus("what did I cook a couple of days ago?", at)
    assert couple is not None and couple.contains(at - timedelta(days=2))
    few = time_focus("the film I saw a few weeks ago", at)
    assert few is not None and few.contains(at - timedelta(days=21))
    spring = time_focus("which airline did I fly with most in March and April?", at)
    assert spring == TimeFocus(datetime(2027, 3, 1, tzinfo=UTC), datetime(2027, 5, 1, tzinfo=UTC))


def test_a_moment_outside_a_window_still_counts_a_little_less_the_further_it_is() -> None:
    at = datetime(2027, 6, 15, tzinfo=UTC)
    may = time_focus("the trip in May", at)
    assert may is not None
    inside, near, far = (datetime(2027, m, d, tzinfo=UTC) for m, d in ((5, 9), (6, 3), (1, 2)))
    assert may.closeness(inside) == 1.0
    assert 1.0 > may.closeness(near) > 0.5 > may.closeness(far) > 0.0
    day = time_focus("what did I do yesterday", at)
    assert day is not None and day.closeness(at - timedelta(days=8)) == 0.5  # a week's width


def test_a_question_relating_two_events_asks_for_no_end_of_the_timeline() -> None:
    at = datetime(2027, 6, 15, tzinfo=UTC)
    assert time_focus("what did I order first?", at) == TimeFocus(order=Order.EARLIEST)
    assert time_focus("where do I live now?", at) == TimeFocus(order=Order.LATEST)
    # The state a change ended is the earlier one, whatever else the question says.
    for question in (
        "What was my last name before I changed it?",
        "Where did we live until we moved to the new house?",
        "What did I use to drink before I switched to tea?",
        "What car did I used to drive?",
    ):
        assert time_focus(question, at) == TimeFocus(order=Order.EARLIEST), question
    for question in (
        "Which did I buy first, the dog bed or the training pads?",
        "Which health issue did I deal with first, the cough or the skin tag?",
        "How many days passed between my first lesson and the recital?",
        "What is the order of the three trips I took, from earliest to latest?",
        "In what order did I try the new bakeries?",
        "How long had I been using the new rug when I moved the sofa?",
        "How long have I worked there before I started my current job?",
        "Did I visit Rome before or after the wedding?",
        "What time did I go to bed on the day before I had a doctor's appointment?",
    ):
        assert time_focus(question, at) is None, question


def test_several_facts_of_one_turn_take_one_slot_shown_as_the_best() -> None:
    index = UserIndex(DIM)
    index.upsert(episode("e1", "delivery friday, no mornings, call 0123"), vec(0))
    index.upsert(fact("f1", "delivery time friday", source_id="e1"), vec(0))
    index.upsert(fact("f2", "delivery time not morning", source_id="e1"), vec(0, 1))
    index.upsert(episode("e2", "delivery to the back door"), vec(0, 2))
    hits = index.search("delivery friday", vec(0), at=NOW, k=3)
    assert ids(hits) == ["f1", "e2"]
    assert hits[0].source is not None and hits[0].source.item_id == "e1"


def test_total_is_the_weighted_sum_and_time_halves_in_thirty_days() -> None:
    index = UserIndex(DIM)
    index.upsert(fact("f1", "user likes tea", days_ago=30), vec(0))
    [hit] = index.search("tea", vec(0), at=NOW, k=1, weights=(0.6, 0.3, 0.1))
    assert hit.time == pytest.approx(1 / (1 + 30 / 30))
    assert hit.total == pytest.approx(0.6 * hit.vector + 0.3 * hit.keyword + 0.1 * hit.time)


def test_each_signal_decides_when_the_others_tie() -> None:
    index = UserIndex(DIM)
    index.upsert(fact("old", "user likes tea", days_ago=90), vec(0))
    index.upsert(fact("new", "user likes tea", days_ago=1), vec(0))
    assert ids(index.search("tea", vec(0), at=NOW, k=2)) == ["new", "old"]  # time
    only_time = index.search("tea", vec(0), at=NOW, k=2, weights=(0.0, 0.0, 1.0))
    assert ids(only_time) == ["new", "old"]
    index = UserIndex(DIM)
    index.upsert(fact("near", "user likes coffee"), vec(0))
    index.upsert(fact("far", "user likes tea"), vec(1))
    assert ids(index.search("tea", vec(0), at=NOW, k=2, weights=(0.0, 1.0, 0.0))) == ["far", "near"]
    assert ids(index.search("tea", vec(0), at=NOW, k=2, weights=(1.0, 0.0, 0.0))) == ["near", "far"]


def test_an_exact_value_in_the_query_hits_the_hashed_object() -> None:
    index = UserIndex(DIM)
    index.upsert(fact("old", "user phone number 555-0100", exact_keys=frozenset({1})), vec(0))
    index.upsert(fact("new", "user phone number 555-0199", exact_keys=frozenset({2})), vec(0))
    hits = index.search("call me on that number", vec(0), at=NOW, k=2, exact_keys=frozenset({2}))
    assert ids(hits) == ["new", "old"] and hits[0].keyword > hits[1].keyword


def test_expired_items_are_not_recalled() -> None:
    index = UserIndex(DIM)
    gone = NOW - timedelta(hours=1)
    index.upsert(fact("gone", "user travel berlin", expires_at=gone), vec(0))
    assert index.search("travel", vec(0), at=NOW, k=1) == []
    assert ids(index.search("travel", vec(0), at=NOW - timedelta(hours=2), k=1)) == ["gone"]


def test_an_exact_value_hit_is_found_among_hundreds_of_closer_turns() -> None:
    # 300 turns name the same number and are each a little closer to the query
    # than the fact holding it: only the exact hit tells them apart, so the
    # first cut over every row must count it, or the fact misses the shortlist.
    index = UserIndex(DIM)
    near = vec(0) + 0.1 * vec(1)
    for i in range(300):
        index.upsert(episode(f"e{i}", "was it 07700 900123"), near)
    index.upsert(
        fact("number", "the phone number on file is 07700 900123", exact_keys=frozenset({42})),
        vec(0) + 0.5 * vec(1),
    )
    hits = index.search("07700 900123?", near, at=NOW, k=3, exact_keys=frozenset({42}))
    assert ids(hits)[0] == "number"
    assert hits[0].keyword > hits[1].keyword


def test_an_answer_takes_the_place_of_its_short_question() -> None:
    index = UserIndex(DIM)
    # The question shares the query's words; the answer holds the value.
    index.upsert(episode("q", "Kitchen done?", days_ago=30, answered_by="a"), vec(0))
    index.upsert(episode("a", "done July 3, final bill came to $35,200", days_ago=30), vec(4))
    for i in range(12):
        index.upsert(episode(f"n{i}", f"kitchen tiles chat {i}", days_ago=40), vec(0, 5))
    hits = index.search("when was the kitchen done?", vec(0), at=NOW, k=20)
    assert ids(hits)[0] == "a"
    # The question takes the answer's own place, after the turns that beat it.
    assert ids(hits).index("q") > ids(hits).index("n0")


def test_an_answer_already_above_its_question_keeps_its_place() -> None:
    index = UserIndex(DIM)
    index.upsert(episode("q", "Any news?", days_ago=5, answered_by="a"), vec(3))
    index.upsert(episode("a", "the kitchen is finally done", days_ago=5), vec(0))
    hits = index.search("kitchen done", vec(0), at=NOW, k=2)
    assert ids(hits) == ["a", "q"]
    assert hits[1].total < 0.5 * hits[0].total  # the question kept its own low score


def test_the_users_own_name_in_the_query_does_not_pick_the_hello() -> None:
    index = UserIndex(DIM)
    index.upsert(episode("hello", "Hi it's Kerry, need to change a couple of things"), vec(0))
    index.upsert(episode("party", "in our party: Lee, the three kids and the dog"), vec(1))
    index.upsert(episode("food", "party food for the kids"), vec(2))
    index.upsert(episode("pitch", "a hardstanding pitch for the party"), vec(3))
    query = "Who's in Kerry's party?"
    # "Kerry" is rarer than "party" in her own memory: it wins the keyword part.
    assert ids(index.search(query, vec(5), at=NOW, k=3))[0] == "hello"
    asked = in_first_person(query, frozenset(terms("Kerry Walsh")))
    assert asked == "Who's in my party?"
    named = index.search(asked, vec(5), at=NOW, k=3)
    assert "hello" not in ids(named) and len(named) == 3


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("How does Kerry prefer to be contacted?", "How do I prefer to be contacted?"),
        ("What make of boiler does Mrs Walsh have?", "What make of boiler do I have?"),
        ("Did Kerry Walsh book the pitch?", "Did I book the pitch?"),
        ("Where is Kerry\u2019s caravan?", "Where is my caravan?"),
        ("Who is Lee?", "Who is Lee?"),  # someone else's name stays
        ("Mrs Lee's order?", "Mrs Lee's order?"),  # a title alone names no one
        ("Kerry", "Kerry"),  # only her name: nothing else would be left to match
    ],
)
def test_a_query_naming_the_user_is_asked_in_the_first_person(query: str, said: str) -> None:
    assert in_first_person(query, frozenset(terms("Kerry Walsh"))) == said
    assert in_first_person(query, frozenset()) == query


def test_a_month_or_a_day_is_never_taken_for_the_users_name() -> None:
    kerry_may = frozenset(terms("Kerry May"))
    assert in_first_person("What did Kerry book in May?", kerry_may) == "What did I book in May?"
    # A user called May is not asked about as "I": the month would be too.
    assert in_first_person("What did May book?", frozenset(terms("May"))) == "What did May book?"
    assert in_first_person("Is Chen free on Monday?", frozenset(terms("Monday Chen"))) == (
        "am I free on Monday?"
    )


def booked_operation() -> UserIndex:
    """An index holding one early turn that names a date: the update tests' starting point."""
    index = UserIndex(DIM)
    index.upsert(
        episode("booked", "eye operation booked for May 11th", days_ago=40, session_id="s1"),
        vec(0, 1),
    )
    return index


def test_a_later_turn_on_the_same_topic_with_a_new_value_ranks_above_the_earlier() -> None:
    # The earlier turn says the question's words; the update is terse.
    index = booked_operation()
    index.upsert(
        episode("done", "done Tuesday, the 15th", days_ago=3, session_id="s4"), vec(0, 1, 2)
    )
    index.upsert(episode("other", "the garden is lovely", days_ago=2, session_id="s4"), vec(5))
    hits = index.search("when was the eye operation?", vec(0, 1), at=NOW, k=3)
    assert ids(hits)[:2] == ["done", "booked"]


def test_a_later_turn_without_a_value_or_on_another_topic_keeps_its_rank() -> None:
    index = booked_operation()
    # Same topic, but no value of its own: chit-chat about the operation.
    index.upsert(episode("chat", "so nervous about it", days_ago=3, session_id="s4"), vec(0, 1, 2))
    # A value, but about something else (orthogonal vector).
    index.upsert(episode("bus", "bus at 7 tomorrow", days_ago=2, session_id="s5"), vec(3))
    hits = index.search("when is the eye operation?", vec(0, 1), at=NOW, k=3)
    assert ids(hits)[0] == "booked"


@pytest.mark.parametrize(
    "later",
    ["the marketing team sent flowers", "the mayor visited the ward", "such a decent surgeon"],
)
def test_a_word_that_starts_like_a_month_is_no_value(later: str) -> None:
    # "marketing", "mayor", "decent" begin like a month's abbreviation but name none.
    index = booked_operation()
    index.upsert(episode("later", later, days_ago=3, session_id="s4"), vec(0, 1, 2))
    hits = index.search("when is the eye operation?", vec(0, 1), at=NOW, k=2)
    assert ids(hits)[0] == "booked"


def test_asking_for_the_first_time_keeps_the_earlier_turn_first() -> None:
    index = booked_operation()
    index.upsert(
        episode("moved", "eye operation moved to June 15th", days_ago=3, session_id="s4"),
        vec(0, 1, 2),
    )
    focus = TimeFocus(order=Order.EARLIEST)
    hits = index.search("eye operation first date", vec(0, 1), at=NOW, k=2, focus=focus)
    assert ids(hits)[0] == "booked"


def fitters_quoted() -> UserIndex:
    """An index holding one early turn that quotes a start date."""
    index = UserIndex(DIM)
    index.upsert(
        episode(
            "quoted", "the fitters can start on Monday 4th October", days_ago=40, session_id="s2"
        ),
        vec(0, 2, 3),
    )
    return index


def fitters_rebooked() -> UserIndex:
    """The quote, then a terse rebooking that shares few words and little vector with it."""
    index = fitters_quoted()
    # Cosine 0.29 to the quote: below SAME_TOPIC, above KIND_TOPIC.
    index.upsert(
        episode("moved", "fine, the 1st of November then", days_ago=3, session_id="s4"),
        vec(1, 3, 4, 5),
    )
    index.upsert(episode("other", "the garden is lovely", days_ago=2, session_id="s4"), vec(6))
    return index


def test_a_later_turn_with_the_kind_of_value_asked_for_is_its_update() -> None:
    # The two turns share few words and little of their vectors: the question
    # ("when") says that both answer it, with a date each.
    hits = fitters_rebooked().search("when are the fitters starting?", vec(0, 1), at=NOW, k=3)
    assert ids(hits)[:2] == ["moved", "quoted"]


@pytest.mark.parametrize("query", ["are the fitters starting?", "how much are the fitters?"])
def test_a_question_not_asking_for_that_kind_of_value_links_no_update(query: str) -> None:
    hits = fitters_rebooked().search(query, vec(0, 1), at=NOW, k=3)
    assert ids(hits)[:2] == ["quoted", "moved"]


def test_a_later_dated_turn_about_nothing_like_it_is_no_update() -> None:
    index = fitters_quoted()
    # Orthogonal to the quote: a date, but about something else.
    index.upsert(
        episode("party", "Tom's party is on the 1st of November", days_ago=3, session_id="s4"),
        vec(1, 4, 5),
    )
    hits = index.search("when are the fitters starting?", vec(0, 1), at=NOW, k=2)
    assert ids(hits) == ["quoted", "party"]
