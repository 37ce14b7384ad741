"""Learned extractor tagging: reading, alignment of gold objects to spans, decoding of tags."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.extract.learned.compose import composes
from pipelines.extract.learned.tagging import (
    BLIND_DIR,
    Example,
    GoldTriple,
    LabelledSpan,
    align,
    bio_tags,
    coverage,
    decode,
    encode,
    labelled_files,
    parse_span_label,
    read_examples,
    span_label,
    spans_from_marginals,
    tokenise,
    with_apostrophe,
)
from pipelines.extract.learned.windows import one_window, widen


def example(text: str, *gold: GoldTriple, previous: str = "", role: str = "user") -> Example:
    return Example("t.txt:1", "c1", "c1-s1", 1, role, text, previous, tuple(gold))


def tagged(alignment_words: list[str], tags: list[str]) -> list[tuple[str, str]]:
    return [(w, t) for w, t in zip(alignment_words, tags, strict=True) if t != "O"]


def test_tokens_split_clitics_keep_numbers_with_units_and_emails() -> None:
    words = [t.text for t in tokenise("Monday's fine, call 0151 234 5678 at 10am: jo.k@ex.org.")]
    assert words[:3] == ["Monday", "'s", "fine"]
    assert {"0151", "234", "5678", "10am", "jo.k@ex.org"} <= set(words)
    assert [t.text for t in tokenise("I don't eat gluten-free")] == [
        "I",
        "don't",
        "eat",
        "gluten-free",
    ]


def test_labels_carry_polarity_and_hedge() -> None:
    assert span_label("appointment_time", negated=True) == "appointment_time~neg"
    assert span_label("likes", True, True) == "likes~neg~hedge"
    assert parse_span_label("likes~neg~hedge") == ("likes", True, True)
    assert parse_span_label("plan~hedge") == ("plan", False, True)


def test_a_bare_yes_is_aligned_to_the_offer_in_the_previous_turn() -> None:
    gold = GoldTriple("appointment_time", "tuesday")
    found = align(example("Yes, fine.", gold, previous="Would Tuesday suit?"))
    assert found.unaligned == ()
    assert found.in_context == 1
    assert tagged(found.encoded.words, found.tags) == [("Tuesday", "B-appointment_time")]
    # The turn's own words win over the context's.
    found = align(example("Tuesday is fine.", gold, previous="Would Tuesday suit?"))
    assert found.in_context == 0
    start = found.encoded.current_start
    assert found.spans == (LabelledSpan("appointment_time", start, start + 1),)


def test_a_negated_span_gets_the_negated_label_and_a_normalised_match() -> None:
    found = align(
        example(
            "I never eat mushrooms, and please don't send text messages.",
            GoldTriple("likes", "mushroom", negated=True),
            GoldTriple("contact_channel", "sms", negated=True),
        )
    )
    assert found.unaligned == ()
    assert tagged(found.encoded.words, found.tags) == [
        ("mushrooms", "B-likes~neg"),
        ("text", "B-contact_channel~neg"),
    ]


def test_phone_numbers_and_addresses_span_several_tokens() -> None:
    found = align(
        example(
            "It's 0151 234 5678, and I live at 14 Baker St, London.",
            GoldTriple("phone_number", "01512345678"),
            GoldTriple("address", "14 baker street, london"),
        )
    )
    assert found.unaligned == ()
    spans = tagged(found.encoded.words, found.tags)
    assert [w for w, _ in spans] == ["0151", "234", "5678", "14", "Baker", "St", ",", "London"]


def test_an_old_two_fact_time_is_merged_into_one_window() -> None:
    found = align(
        example(
            "Monday at 10am works.",
            GoldTriple("appointment_time", "monday"),
            GoldTriple("appointment_time", "10am"),
        )
    )
    assert found.merged == 1
    assert [g.obj for g in found.gold] == ["monday 10am"]
    assert tagged(found.encoded.words, found.tags) == [
        ("Monday", "B-appointment_time"),
        ("at", "I-appointment_time"),
        ("10am", "I-appointment_time"),
    ]
    assert coverage([example("x")], [align(example("x"))]).total == 0


def test_a_window_said_in_two_parts_is_two_spans_and_decodes_as_one() -> None:
    gold = GoldTriple("appointment_time", "monday 10am", hedged=True)
    found = align(example("10am on Monday, if you can.", gold))
    assert found.unaligned == ()
    assert tagged(found.encoded.words, found.tags) == [
        ("10am", "B-appointment_time~hedge"),
        ("Monday", "B-appointment_time~hedge"),
    ]
    [triple] = decode(found.encoded, found.spans)
    assert (triple.predicate, triple.obj, triple.hedged) == (
        "appointment_time",
        "10am monday",
        True,
    )


def test_alternatives_stay_separate_facts() -> None:
    assert not one_window("Monday", "Wednesday", ["or"])
    assert not one_window("Monday", "10am", ["or"])
    assert one_window("Monday", "10am", ["at"])
    found = align(
        example(
            "Monday or Wednesday.",
            GoldTriple("delivery_time", "monday"),
            GoldTriple("delivery_time", "wednesday"),
        )
    )
    assert found.merged == 0
    assert sorted(t.obj for t in decode(found.encoded, found.spans)) == ["monday", "wednesday"]


def test_values_that_are_not_in_the_text_are_reported_unaligned() -> None:
    found = align(example("Red, I don't drink white.", GoldTriple("likes", "white wine", True)))
    assert found.spans == ()
    assert found.unaligned == (GoldTriple("likes", "white wine", True),)
    report = coverage([example("x", GoldTriple("likes", "white wine", True))], [found])
    assert (report.total, report.aligned, len(report.unaligned)) == (1, 0, 1)


def test_decoding_predicted_tags_gives_typed_triples_with_scores() -> None:
    encoded = encode("Best number?", "Not on weekends. It's 07700 900123.", "user")
    words = encoded.words
    weekends, first = words.index("weekends"), words.index("07700")
    spans = [
        LabelledSpan("delivery_time~neg", weekends, weekends + 1, 1.0),
        LabelledSpan("phone_number", first, first + 2, 0.8),
    ]
    triples = decode(encoded, spans)
    by_predicate = {t.predicate: t for t in triples}
    assert by_predicate["delivery_time"].obj == "weekend"
    assert by_predicate["delivery_time"].negated
    phone = by_predicate["phone_number"]
    assert (phone.obj, phone.from_context) == ("07700900123", False)
    assert phone.confidence == pytest.approx(0.8)


def test_an_address_tagged_in_parts_around_a_comma_decodes_as_one() -> None:
    encoded = encode("", "Send it to 200 Market Street, 7th floor, or to Leeds or York.", "user")
    words = encoded.words

    def span(label: str, first: str, last: str) -> LabelledSpan:
        return LabelledSpan(label, words.index(first), words.index(last) + 1, 0.9)

    spans = [
        span("address", "200", "Street"),
        span("address", "7th", "floor"),
        span("lives_in", "Leeds", "Leeds"),  # "or" keeps two places apart
        span("lives_in", "York", "York"),
    ]
    triples = decode(encoded, spans)
    assert sorted(t.obj for t in triples) == ["200 market street, 7th floor", "leeds", "york"]


@pytest.mark.parametrize(
    ("text", "ends", "expected"),
    [
        (
            "Come on April 15 between 8 am and noon.",
            [("April", "am"), ("noon", "noon")],
            ["april 15 between 8am and noon"],
        ),
        ("I'm in from 9 to 5.", [("9", "9"), ("5", "5")], ["9 to 5"]),
        (
            "Any time between Monday and Wednesday.",
            [("Monday", "Monday"), ("Wednesday", "Wednesday")],
            ["between monday and wednesday"],
        ),
        # No range word opened it: two times, two facts.
        (
            "Monday and Wednesday suit me.",
            [("Monday", "Monday"), ("Wednesday", "Wednesday")],
            ["monday", "wednesday"],
        ),
        # A range word but no single range link between the ends.
        (
            "From Monday, or else Friday.",
            [("Monday", "Monday"), ("Friday", "Friday")],
            ["friday", "monday"],
        ),
    ],
)
def test_a_range_said_by_its_two_ends_decodes_as_one_window(
    text: str, ends: list[tuple[str, str]], expected: list[str]
) -> None:
    encoded = encode("", text, "user")
    words = encoded.words
    spans = [
        LabelledSpan("appointment_time", words.index(a), words.index(b) + 1, 0.9) for a, b in ends
    ]
    assert sorted(t.obj for t in decode(encoded, spans)) == expected


def test_a_value_cut_mid_phrase_loses_the_linking_word_it_ends_in() -> None:
    encoded = encode("", "Come on April 15 between 8 and 9. I'm moving to Leeds.", "user")
    words = encoded.words
    april, moving = words.index("April"), words.index("moving")
    spans = [
        LabelledSpan("appointment_time", april, april + 3, 0.9),  # "April 15 between"
        LabelledSpan("plans_to", moving, moving + 2, 0.9),  # "moving to"
    ]
    assert sorted(t.obj for t in decode(encoded, spans)) == ["april 15", "moving"]


def test_decoding_keeps_context_spans_apart_and_drops_values_of_the_wrong_type() -> None:
    encoded = encode("Would Tuesday suit?", "Yes.", "user")
    tuesday = encoded.words.index("Tuesday")
    spans = [
        LabelledSpan("appointment_time", tuesday, tuesday + 1, 0.6),
        # Across the separator: clipped to the context segment it starts in.
        LabelledSpan("email", tuesday + 1, len(encoded.words), 0.9),
    ]
    [triple] = decode(encoded, spans)
    assert (triple.obj, triple.from_context, triple.confidence) == ("tuesday", True, 0.6)


def test_bio_tags_mark_each_span_with_its_begin_and_inside() -> None:
    spans = [LabelledSpan("plan", 1, 3), LabelledSpan("likes~neg", 3, 4)]
    assert bio_tags(5, spans) == ["O", "B-plan", "I-plan", "B-likes~neg", "O"]


LABELS = ["appointment_time", "travel_time"]


def _word(outside: float, begin: tuple[float, float], inside: tuple[float, float]) -> tuple:
    return outside, list(begin), list(inside)


def _spans(*words: tuple) -> list[LabelledSpan]:
    outside, begins, insides = zip(*words, strict=True)
    return spans_from_marginals(list(outside), list(begins), list(insides), LABELS)


def test_a_word_leaning_to_another_predicate_stays_in_its_value() -> None:
    # "May 12 to 14": per-word argmax read "12" as appointment_time (0.32) and cut the date in two.
    spans = _spans(
        _word(0.04, (0.0, 0.92), (0.0, 0.04)),  # May
        _word(0.08, (0.1, 0.1), (0.32, 0.3)),  # 12
        _word(0.2, (0.0, 0.1), (0.0, 0.7)),  # to
        _word(0.1, (0.0, 0.0), (0.1, 0.8)),  # 14
        _word(0.9, (0.0, 0.05), (0.0, 0.05)),  # .
    )
    assert [(s.label, s.start, s.end) for s in spans] == [("travel_time", 0, 4)]
    assert spans[0].score == pytest.approx((0.96 + 0.4 + 0.8 + 0.8) / 4)


def test_begin_mass_starts_a_new_value_and_outside_mass_ends_one() -> None:
    spans = _spans(
        _word(0.1, (0.8, 0.0), (0.1, 0.0)),  # Monday
        _word(0.2, (0.0, 0.7), (0.1, 0.0)),  # May 11: a new value right after
        _word(0.6, (0.2, 0.0), (0.0, 0.2)),  # O more likely than any value: outside
        _word(0.3, (0.0, 0.1), (0.6, 0.0)),  # an I- after O still starts a value
    )
    assert [(s.label, s.start, s.end) for s in spans] == [
        ("appointment_time", 0, 1),
        ("travel_time", 1, 2),
        ("appointment_time", 3, 4),
    ]


def test_a_word_that_leans_inside_a_value_extends_it_though_outside_is_likelier() -> None:
    # "mile end" came out as "mile": "end" was 0.55 outside, and most of the rest inside.
    spans = _spans(
        _word(0.1, (0.85, 0.0), (0.05, 0.0)),  # mile
        _word(0.55, (0.05, 0.0), (0.4, 0.0)),  # end: extends the open value
        _word(0.95, (0.0, 0.0), (0.05, 0.0)),  # ,
        _word(0.55, (0.05, 0.0), (0.4, 0.0)),  # the same odds with no value open: outside
    )
    assert [(s.label, s.start, s.end) for s in spans] == [("appointment_time", 0, 2)]
    # Outside at 0.6 or more, or leaning to begin a value of its own, it does not.
    opened = _word(0.1, (0.85, 0.0), (0.05, 0.0))
    for after in (_word(0.6, (0.0, 0.0), (0.4, 0.0)), _word(0.55, (0.3, 0.0), (0.15, 0.0))):
        assert [(s.start, s.end) for s in _spans(opened, after)] == [(0, 1)]


def test_reading_a_file_links_each_turn_to_the_previous_one_of_its_session(tmp_path: Path) -> None:
    path = tmp_path / "split.txt"
    path.write_text(
        "# written blind\n"
        "= x01 acme ux01\n@ s1 2026-03-02T09:00:00+00:00\n"
        "A: Would Tuesday suit?\n+ appointment_time | tuesday | agent\n"
        "U: Yes, fine.\n+ appointment_time | tuesday\n"
        "@ s2 2026-03-09T09:00:00+00:00\n"
        "U: Actually not Tuesday.\n+ appointment_time | tuesday | neg update\n",
        encoding="utf-8",
    )
    offer, yes, later = read_examples(path, tmp_path)
    assert (offer.role, offer.gold[0].agent) == ("agent", True)
    assert (yes.previous_text, yes.turn_index) == ("Would Tuesday suit?", 1)
    assert later.previous_text == "" and later.session == "x01-s2"
    assert later.gold == (GoldTriple("appointment_time", "tuesday", True, False, True, False),)
    assert yes.source == "split.txt:6"


def test_the_blind_folder_is_never_listed_or_read(tmp_path: Path) -> None:
    (tmp_path / "train").mkdir()
    (tmp_path / BLIND_DIR).mkdir()
    for name in ("a.txt", "train/b.txt", f"{BLIND_DIR}/c.txt", "README.md"):
        (tmp_path / name).write_text("", encoding="utf-8")
    assert labelled_files(tmp_path) == [tmp_path / "a.txt", tmp_path / "train" / "b.txt"]
    with pytest.raises(ValueError, match="blind"):
        read_examples(tmp_path / BLIND_DIR / "c.txt")


def test_a_value_said_in_two_parts_is_two_spans_and_decodes_as_one() -> None:
    found = align(
        example("We got a cat last week, called her Pickle", GoldTriple("pet", "cat pickle"))
    )
    assert found.unaligned == ()
    assert tagged(found.encoded.words, found.tags) == [("cat", "B-pet"), ("Pickle", "B-pet")]
    [triple] = decode(found.encoded, found.spans)
    assert (triple.predicate, triple.obj) == ("pet", "cat pickle")
    wedding = GoldTriple("event", "brother's wedding 14 june")
    found = align(example("My brother's wedding is on 14 June, so not that weekend.", wedding))
    assert found.unaligned == ()
    assert [t.obj for t in decode(found.encoded, found.spans)] == ["brother's wedding 14 june"]


def test_parts_of_one_kind_or_across_sentences_stay_apart() -> None:
    assert composes("cat", "Pickle", [",", "called", "her"])
    assert composes("wedding", "14 June", ["is", "on"])
    assert not composes("cats", "dogs", ["and"])  # two likes
    assert not composes("Tom", "Ellie", [","])  # two names
    assert not composes("cat", "Pickle", ["?", "her", "name", "is"])  # another sentence
    found = align(
        example("I love tea and cake.", GoldTriple("likes", "tea"), GoldTriple("likes", "cake"))
    )
    assert sorted(t.obj for t in decode(found.encoded, found.spans)) == ["cake", "tea"]


def test_a_part_that_runs_on_into_linking_words_still_joins_the_next_part() -> None:
    # The tagger ran "Margaret" on into ", the"; cut back, it joins "wife".
    encoded = encode("How's home?", "Margaret, the wife, says I'm under her feet", "user")
    words = encoded.words
    margaret, wife = words.index("Margaret"), words.index("wife")
    spans = [
        LabelledSpan("family_member", margaret, wife, 0.9),
        LabelledSpan("family_member", wife, wife + 1, 0.9),
    ]
    assert words[margaret:wife] == ["Margaret", ",", "the"]
    [triple] = decode(encoded, spans)
    assert (triple.predicate, triple.obj) == ("family_member", "wife margaret")
    assert encoded.text[triple.start : triple.end] == "Margaret, the wife"


def test_parts_in_the_context_and_in_the_turn_are_never_joined() -> None:
    # A short context and a part far into the turn: each part is read in its own segment.
    encoded = encode("Your cat?", "She is fine, the vet says Pickle is a healthy girl", "user")
    cat, pickle = encoded.words.index("cat"), encoded.words.index("Pickle")
    spans = [LabelledSpan("pet", cat, cat + 1, 0.9), LabelledSpan("pet", pickle, pickle + 1, 0.9)]
    found = sorted((t.obj, t.from_context) for t in decode(encoded, spans))
    assert found == [("cat", True), ("pickle", False)]


def test_an_address_tagged_without_its_house_number_takes_it_back() -> None:
    encoded = encode("One veggie set to 12 Birch Court?", "Yes.", "user")
    words = encoded.words
    birch = words.index("Birch")
    [triple] = decode(encoded, [LabelledSpan("address", birch, birch + 2, 0.9)])
    assert (triple.obj, triple.from_context) == ("12 birch court", True)


def test_contractions_texted_without_an_apostrophe_are_respelled_for_the_model() -> None:
    words = ["Dont", "call", "me", "im", "out", ",", "ill", "text", "its", "fine", "cant", "wont"]
    assert [with_apostrophe(w) for w in words] == [
        "Don't",
        "call",
        "me",
        "i'm",
        "out",
        ",",
        "ill",
        "text",
        "its",
        "fine",
        "can't",
        "won't",
    ]


@pytest.mark.parametrize(
    ("text", "part", "whole"),
    [
        ("flying out 3 April, ten days in Canggu", "April", "3 April"),
        (
            "moved to the 8th of December at two o'clock in the afternoon, ok",
            "December",
            "8th of December at two o'clock in the afternoon",
        ),
        ("Tuesday the 1st of July, 9:15 in the morning", "Tuesday", "Tuesday the 1st of July"),
        ("Seamus Doherty, the 9th of November 1951.", "9th", "9th of November 1951"),
        ("Monday or Wednesday at 10", "Monday", "Monday"),
        ("from 9 to 5 please", "9", "9"),
        ("we met at 3 in the park", "3", "3"),
        ("in the morning I work", "morning", "morning"),
    ],
)
def test_a_tagged_part_of_a_time_widens_to_the_whole_expression(
    text: str, part: str, whole: str
) -> None:
    words = [t.text for t in tokenise(text)]
    at = words.index(part)
    first, last = widen(words, at, at + 1)
    assert " ".join(words[first:last]) == whole


def test_a_date_tagged_in_fragments_decodes_as_one_value() -> None:
    # The tagger marked the day and the month apart and left the clock out:
    # three fragments were three facts ("8th", "december", "afternoon").
    encoded = encode("", "It's now the 8th of December at two o'clock in the afternoon.", "user")
    words = encoded.words
    start = encoded.current_start
    spans = [
        LabelledSpan("appointment_time", words.index(w), words.index(w) + 1, 0.8)
        for w in ("8th", "December", "afternoon")
    ]
    assert all(s.start >= start for s in spans)
    [triple] = decode(encoded, spans)
    assert (triple.predicate, triple.obj) == ("appointment_time", "8 december 2pm")


def test_a_part_running_past_the_widened_time_keeps_its_remainder() -> None:
    encoded = encode("", "Friday the 2nd, after 3 again?", "user")
    words = encoded.words
    friday, second = words.index("Friday"), words.index("2nd")
    spans = [
        LabelledSpan("appointment_time", friday, friday + 1, 0.8),
        LabelledSpan("appointment_time", second, words.index("3") + 1, 0.8),
    ]
    [triple] = decode(encoded, spans)
    assert triple.obj == "friday 2nd after 3"
