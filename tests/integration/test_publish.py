"""`memstream publish` and the sample stream end to end through the real broker."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors import kafka_admin
from connectors.kafka_io import Record, end_offsets, read_topic
from jobs.cli.run import SAMPLE_DIR, publish_sample
from memstream.settings import Settings
from schemas.deadletter import DeadLetter
from schemas.topics import DIALOGUE_EVENTS, INPUT_TOPICS, MEMORY_DLQ, Topics

MEMSTREAM = Path(sys.executable).parent / "memstream"


def turn(event_id: str, user: str = "u-1", **overrides: object) -> dict[str, object]:
    return {
        "event_id": event_id,
        "tenant_id": "t-publish",
        "user_id": user,
        "session_id": "s-1",
        "turn_index": 0,
        "role": "user",
        "text": "We can install Monday but not Friday.",
        "ts": "2026-03-02T09:00:00Z",
        **overrides,
    }


def line(data: dict[str, object]) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


def run_publish(
    topic: str, file: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(MEMSTREAM), "publish", topic, file], input=stdin, capture_output=True, timeout=120
    )


def records_since(bootstrap: str, topic: str, start: dict[int, int], token: str) -> list[Record]:
    """This test's records: the shared topic may also hold other writers' records."""
    return [r for r in read_topic(bootstrap, topic, start=start) if token.encode() in r.value]


def letters(records: list[Record], token: str) -> list[DeadLetter]:
    parsed = [DeadLetter.model_validate_json(r.value) for r in records]
    return [letter for letter in parsed if token.encode() in letter.original()]


def test_publish_sends_valid_lines_and_dead_letters_every_bad_one(
    kafka_bootstrap: str, unique: str, tmp_path: Path
) -> None:
    token = f"pub-{unique}"
    lines = [
        line(turn(f"{token}-1")),
        f'{{"event_id": "{token}-bad", oops'.encode(),  # malformed JSON
        line({k: v for k, v in turn(f"{token}-3").items() if k != "text"}),  # missing field
        line(turn(f"{token}-4", user="u-2")),
        line(turn(f"{token}-5", turn_index="three")),  # wrong type
        line(turn(f"{token}-6", text="long " * 400_000)),  # a 2 MB text
        f'{{"event_id": "{token}-7", "text": "caf'.encode() + b'\xe9"}',  # not UTF-8
        b"",
        line(turn(f"{token}-9", text="我们周一可以安装，但周五不行。", lang="zh")),
        line(turn(f"{token}-10", user="u-3")),
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    start = {t: end_offsets(kafka_bootstrap, t) for t in (DIALOGUE_EVENTS, MEMORY_DLQ)}

    result = run_publish(DIALOGUE_EVENTS, str(path))

    stderr = result.stderr.decode()
    assert result.returncode == 1, stderr
    assert "published 4, dead-lettered 5" in result.stdout.decode()
    expected = {
        2: "malformed_json",
        3: "schema_violation",
        5: "schema_violation",
        6: "too_large",
        7: "not_utf8",
    }
    for number, reason in expected.items():
        assert f"line {number}: {reason}: " in stderr
    assert "line 3: schema_violation: DialogueEvent invalid: text: Field required" in stderr
    assert "turn_index: Value error, expected a JSON integer, got a string" in stderr

    published = records_since(kafka_bootstrap, DIALOGUE_EVENTS, start[DIALOGUE_EVENTS], token)
    by_id = {json.loads(r.value)["event_id"]: r for r in published}
    assert sorted(by_id) == sorted(f"{token}-{n}" for n in (1, 4, 9, 10))
    assert by_id[f"{token}-4"].key == "t-publish:u-2"
    assert by_id[f"{token}-9"].value == lines[8]

    dead = letters(read_topic(kafka_bootstrap, MEMORY_DLQ, start=start[MEMORY_DLQ]), token)
    assert {d.line: d.reason.value for d in dead} == expected
    for letter in dead:
        assert letter.topic == DIALOGUE_EVENTS
        assert letter.original() == lines[letter.line - 1]  # type: ignore[operator]


def test_unknown_topic_is_a_usage_error_and_dead_letters_every_line(
    kafka_bootstrap: str, unique: str
) -> None:
    token = f"pub-{unique}"
    stdin = line(turn(f"{token}-1")) + b"\n" + line(turn(f"{token}-2")) + b"\n"
    start = end_offsets(kafka_bootstrap, MEMORY_DLQ)

    result = run_publish("dialog.events", "-", stdin=stdin)

    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert "unknown topic 'dialog.events'; valid topics: " + ", ".join(INPUT_TOPICS) in stderr
    dead = letters(read_topic(kafka_bootstrap, MEMORY_DLQ, start=start), token)
    assert sorted((d.line, d.reason.value, d.topic) for d in dead) == [
        (1, "unknown_topic", "dialog.events"),
        (2, "unknown_topic", "dialog.events"),
    ]


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = run_publish(DIALOGUE_EVENTS, str(tmp_path / "absent.jsonl"))
    assert result.returncode == 2
    assert "no such file" in result.stderr.decode()


@pytest.fixture
def namespace(kafka_bootstrap: str, settings: Settings, unique: str) -> Iterator[str]:
    """A private copy of the input topics and the dead-letter topic."""
    prefix = f"test.{unique}."
    partitions = settings.kafka.partitions
    large = {"max.message.bytes": str(settings.kafka.max_message_bytes)}
    specs = [kafka_admin.TopicSpec(Topics(prefix).name(t), partitions) for t in INPUT_TOPICS]
    specs.append(kafka_admin.TopicSpec(Topics(prefix).dlq, partitions, large))
    kafka_admin.ensure_topics(kafka_bootstrap, specs)
    yield prefix
    kafka_admin.delete_topics(kafka_bootstrap, [s.name for s in specs])


def test_sample_stream_is_published_and_read_back_per_topic(
    settings: Settings, namespace: str
) -> None:
    counts = {
        c.topic.removeprefix(namespace): c for c in publish_sample(settings, namespace=namespace)
    }

    assert set(counts) == {*INPUT_TOPICS, MEMORY_DLQ}
    for topic in INPUT_TOPICS:
        lines = (SAMPLE_DIR / f"{topic}.jsonl").read_bytes().splitlines()
        keys = {"{tenant_id}:{user_id}".format(**json.loads(raw)) for raw in lines}
        count = counts[topic]
        assert (count.published, count.dead_lettered, count.read_back) == (
            len(lines),
            0,
            len(lines),
        )
        assert count.keys == len(keys) == 8
        assert 1 < count.partitions <= settings.kafka.partitions
    assert counts[MEMORY_DLQ].read_back == 0
