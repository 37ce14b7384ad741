"""``memstream lag`` against the real broker, checked by independent clients.

The reference figures come from Kafka's own consumer-groups tool, run from the
broker's release jars (``ConsumerGroupCommand --describe``), and from kcat
(librdkafka's list-offsets, for the last stable offset of a transactional topic).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import typer
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from typer.testing import CliRunner

from connectors import kafka_admin
from connectors.kafka_io import consumer, transaction, transactional_producer
from connectors.kafka_offsets import OffsetReader
from infra import toolchain
from jobs.cli.lag import lag
from jobs.ops.lag import LagMonitor
from memstream.settings import Settings, get_settings
from pipelines.lag import Rules, Status

# Where Kafka 3.7+ keeps kafka-consumer-groups.sh's main class.
TOOL_CLASS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
TOOL_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>memstream-test</groupId><artifactId>kafka-tools-jars</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId>
      <version>{version}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId>
      <version>2.0.17</version></dependency>
  </dependencies>
</project>
"""

Row = tuple[str, int, int, int, int]  # topic, partition, current, log end, lag


@pytest.fixture(scope="module")
def consumer_groups_tool(settings: Settings, kafka_bootstrap: str) -> Callable[[str], list[Row]]:
    """``kafka-consumer-groups --describe --group G``, parsed to rows."""
    java = toolchain.find_java(settings.java_home)
    home = settings.cache_dir / "kafka-tools" / settings.kafka.version
    libs = home / "libs"
    if not (libs / ".complete").exists():
        home.mkdir(parents=True, exist_ok=True)
        pom = home / "pom.xml"
        pom.write_text(TOOL_POM.format(version=settings.kafka.version))
        toolchain.run_maven(
            pom,
            [
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={libs}",
            ],
            repo=settings.cache_dir / "m2",
            java=java,
            log_file=home / "maven.log",
        )
        (libs / ".complete").touch()

    def describe(group: str) -> list[Row]:
        command = [str(java), "-cp", f"{libs}/*", TOOL_CLASS, "--bootstrap-server"]
        command += [kafka_bootstrap, "--describe", "--group", group]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        rows = []
        for line in out.splitlines():
            cells = line.split()
            if cells and cells[0] == group:
                topic, partition, current, end, lag_ = cells[1:6]
                rows.append((topic, int(partition), int(current), int(end), int(lag_)))
        return sorted(rows)

    return describe


def kcat_end_offset(bootstrap: str, topic: str, partition: int, *, read_committed: bool) -> int:
    """The log end of a partition as kcat's list-offsets query reports it."""
    isolation = "read_committed" if read_committed else "read_uncommitted"
    command = ["kcat", "-b", bootstrap, "-X", f"isolation.level={isolation}"]
    command += ["-Q", "-t", f"{topic}:{partition}:-1"]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    # "<topic> [<partition>] offset <n>"
    return int(out.split()[-1])


@pytest.fixture
def topic_factory(kafka_bootstrap: str, unique: str) -> Iterator[Callable[[int], str]]:
    """Fresh topics; deleted afterwards with the test's groups (named test-lag-*-<unique>)."""
    created: list[str] = []

    def make(partitions: int) -> str:
        name = f"test.lag.{unique}.{len(created)}"
        kafka_admin.ensure_topics(kafka_bootstrap, [kafka_admin.TopicSpec(name, partitions)])
        created.append(name)
        return name

    yield make
    kafka_admin.delete_topics(kafka_bootstrap, created)
    mine = [g for g in kafka_admin.list_groups(kafka_bootstrap) if g.endswith(unique)]
    kafka_admin.delete_groups(kafka_bootstrap, mine)


def produce(bootstrap: str, topic: str, partition: int, stamps_ms: list[int]) -> None:
    """One record per timestamp, in order, to one partition."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, _msg: Message) -> None:
        if error is not None:
            errors.append(error.str())

    for i, stamp in enumerate(stamps_ms):
        producer.produce(
            topic, value=f"r{i}".encode(), partition=partition, timestamp=stamp,
            on_delivery=on_delivery,
        )  # fmt: skip
    assert producer.flush(30) == 0
    assert errors == []


def commit(member: Consumer, topic: str, offsets: dict[int, int]) -> None:
    positions = [TopicPartition(topic, p, o) for p, o in offsets.items()]
    member.commit(offsets=positions, asynchronous=False)


def joined_member(bootstrap: str, group: str, topic: str) -> Consumer:
    """A live member of ``group`` that owns ``topic``'s partitions and then stops polling."""
    member = consumer(bootstrap, group)
    member.subscribe([topic])
    deadline = time.monotonic() + 30
    while not member.assignment():
        assert time.monotonic() < deadline, "the member never got its partitions"
        member.poll(0.2)
    return member


def run_lag(*args: str) -> Any:
    app = typer.Typer()
    app.command()(lag)
    return CliRunner().invoke(app, list(args))


def cli_rows(document: dict[str, Any]) -> list[Row]:
    return sorted(
        (p["topic"], p["partition"], p["current_offset"], p["log_end_offset"], p["lag"])
        for group in document["groups"]
        for p in group["partitions"]
    )


def test_lag_equals_the_consumer_groups_tool(
    kafka_bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: str,
    consumer_groups_tool: Callable[[str], list[Row]],
) -> None:
    topic, group = topic_factory(3), f"test-lag-{unique}"
    hour_ago_ms = int((time.time() - 3600) * 1000)
    # A minute apart, an hour or more ago (never in the future: the broker
    # rejects timestamps over an hour ahead): each record's age is known exactly.
    stamps = {
        p: [hour_ago_ms - 600_000 * p + 60_000 * i for i in range(n)]
        for p, n in enumerate((10, 7, 4))
    }
    for partition, partition_stamps in stamps.items():
        produce(kafka_bootstrap, topic, partition, partition_stamps)
    member = joined_member(kafka_bootstrap, group, topic)
    commit(member, topic, {0: 3, 1: 7, 2: 0})
    try:
        before = time.time()
        result = run_lag("--group", group, "--json")
        after = time.time()
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        expected = [(topic, 0, 3, 10, 7), (topic, 1, 7, 7, 0), (topic, 2, 0, 4, 4)]
        assert cli_rows(document) == expected
        assert consumer_groups_tool(group) == expected

        (report,) = document["groups"]
        assert (report["group"], report["members"], report["lag"]) == (group, 1, 11)
        assert report["status"] == Status.OK  # a live member, no trend yet
        # Not one of memstream's jobs: the stall time of any other group (settings).
        assert (report["stalled_seconds"], report["stall_after_s"]) == (0.0, 60.0)
        seconds = {p["partition"]: p["lag_seconds"] for p in report["partitions"]}
        # The age of the first unconsumed record, from its timestamp (first call: no history).
        for partition, committed in ((0, 3), (2, 0)):
            appended = stamps[partition][committed] / 1000
            assert before - appended - 0.001 <= seconds[partition] <= after - appended + 0.001
        assert seconds[1] == 0.0

        table = run_lag("--group", group)
        assert table.exit_code == 0, table.output
        lines = table.stdout.splitlines()
        assert lines[0].split() == [
            "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
            "LAG-SECONDS", "STATUS",
        ]  # fmt: skip
        table_rows = [line.split() for line in lines[1:4]]
        assert [(r[1], int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in table_rows] == expected
        assert all(r[0] == group and r[7] == "OK" for r in table_rows)
        assert lines[4].startswith("1 group(s), 3 partition(s), lag 11 message(s)")
    finally:
        member.close()


def test_watch_refreshes_until_count(
    kafka_bootstrap: str, topic_factory: Callable[[int], str], unique: str
) -> None:
    topic, group = topic_factory(1), f"test-lag-watch-{unique}"
    produce(kafka_bootstrap, topic, 0, [int(time.time() * 1000)] * 5)
    member = joined_member(kafka_bootstrap, group, topic)
    commit(member, topic, {0: 1})
    try:
        result = run_lag("--group", group, "--watch", "--count", "3", "--interval", "0.1", "--json")
        assert result.exit_code == 0, result.output
        documents = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(documents) == 3
        assert all(cli_rows(d) == [(topic, 0, 1, 5, 4)] for d in documents)
        # The member neither commits nor leaves: STALL once there is a trend to judge.
        assert [d["groups"][0]["status"] for d in documents] == ["OK", "STALL", "STALL"]

        live = run_lag("--group", group, "--watch", "--count", "2", "--interval", "0.1")
        assert live.exit_code == 0, live.output
        assert "1 group(s), 1 partition(s), lag 4 message(s)" in live.stdout
    finally:
        member.close()


def test_status_follows_the_consumer(
    kafka_bootstrap: str, topic_factory: Callable[[int], str], unique: str
) -> None:
    topic, group = topic_factory(1), f"test-lag-status-{unique}"
    shift = [0.0]  # the monitor's clock runs ahead by this much: the rules see minutes pass
    sampled_at: list[float] = []
    ages: list[float] = []  # LAG-SECONDS of the partition at each step

    def clock() -> float:
        sampled_at.append(time.time() + shift[0])
        return sampled_at[-1]

    monitor = LagMonitor(
        OffsetReader(kafka_bootstrap), Rules(window_s=100.0, stop_after_s=1000.0), clock=clock
    )

    def step(seconds: float) -> tuple[Status, int, str]:
        shift[0] += seconds
        (report,) = monitor.refresh([group])
        ages.append(report.partitions[0].lag_seconds)
        return report.status, report.lag, report.state

    now_ms = int(time.time() * 1000)
    produce(kafka_bootstrap, topic, 0, [now_ms] * 10)
    member = joined_member(kafka_bootstrap, group, topic)
    try:
        commit(member, topic, {0: 2})
        assert step(0) == (Status.OK, 8, "stable")
        # The consumer moves on but the producers outrun it.
        produce(kafka_bootstrap, topic, 0, [now_ms] * 10)
        commit(member, topic, {0: 11})
        assert step(10)[:2] == (Status.WARN, 9)
        # The log end went 10 -> 20 between the samples: record 11 (end 12) was
        # appended a fifth of the way, so it has waited 4/5 of the interval.
        t0, t1 = sampled_at
        assert ages[-1] == pytest.approx(0.8 * (t1 - t0))
        # It stops committing: once the window holds only unmoved offsets, it is stalled.
        assert step(200)[0] is Status.OK  # a lone sample in the window: no trend
        assert step(10)[0] is Status.STALL
    finally:
        member.close()
    # The member has left: nobody commits any more.
    assert step(10) == (Status.STOP, 9, "empty")
    catch_up = consumer(kafka_bootstrap, group)
    commit(catch_up, topic, {0: 20})
    catch_up.close()
    assert step(10)[:2] == (Status.OK, 0)


def test_transactional_topic_lags_to_the_last_stable_offset(
    kafka_bootstrap: str,
    topic_factory: Callable[[int], str],
    unique: str,
    consumer_groups_tool: Callable[[str], list[Row]],
) -> None:
    topic, group, markers = topic_factory(1), f"test-lag-tx-{unique}", f"test-lag-mk-{unique}"
    producer = transactional_producer(kafka_bootstrap, f"test-lag-{unique}")
    with transaction(producer):
        for i in range(5):
            producer.produce(topic, value=f"committed {i}".encode(), partition=0)
    producer.begin_transaction()  # left open: its records are not stable yet
    for i in range(4):
        producer.produce(topic, value=f"open {i}".encode(), partition=0)
    producer.flush()
    try:
        for name, offset in ((group, 2), (markers, 5)):
            committer = consumer(kafka_bootstrap, name)
            commit(committer, topic, {0: offset})
            committer.close()

        stable = kcat_end_offset(kafka_bootstrap, topic, 0, read_committed=True)
        high_watermark = kcat_end_offset(kafka_bootstrap, topic, 0, read_committed=False)
        # 5 records + the commit marker are stable; the 4 open ones are not.
        assert (stable, high_watermark) == (6, 10)

        result = run_lag("--group", group, "--group", markers, "--json")
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert cli_rows(document) == [(topic, 0, 2, stable, 4), (topic, 0, 5, stable, 1)]
        by_group = {g["group"]: g["partitions"][0] for g in document["groups"]}
        assert by_group[group]["lag_seconds"] > 0.0
        # Only the commit marker lies between offset 5 and the LSO: nothing waits.
        assert by_group[markers]["lag_seconds"] == 0.0
        # The consumer-groups tool measures to the high watermark instead.
        assert consumer_groups_tool(group) == [(topic, 0, 2, high_watermark, 8)]
    finally:
        producer.abort_transaction(30)


def test_a_deleted_topic_leaves_the_report_intact(
    kafka_bootstrap: str, topic_factory: Callable[[int], str], unique: str
) -> None:
    kept, gone, group = topic_factory(1), topic_factory(1), f"test-lag-deleted-{unique}"
    for topic in (kept, gone):
        produce(kafka_bootstrap, topic, 0, [int(time.time() * 1000)] * 3)
    committer = consumer(kafka_bootstrap, group)
    commit(committer, kept, {0: 1})
    commit(committer, gone, {0: 2})
    committer.close()
    kafka_admin.delete_topics(kafka_bootstrap, [gone])

    result = run_lag("--group", group, "--json")

    assert result.exit_code == 0, result.output
    assert cli_rows(json.loads(result.stdout)) == [(kept, 0, 1, 3, 2)]


def test_unknown_group_is_a_clear_error(kafka_bootstrap: str, unique: str) -> None:
    missing = f"test-lag-missing-{unique}"
    result = run_lag("--group", missing)
    assert result.exit_code == 2
    assert f"unknown consumer group(s): {missing}" in result.stderr
    assert result.stdout == ""


def test_unreachable_broker_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # Port 9 (discard) has no Kafka behind it: the request times out or is refused.
    monkeypatch.setenv("MEMSTREAM_KAFKA__BOOTSTRAP_SERVERS", "127.0.0.1:9")
    get_settings.cache_clear()
    try:
        result = run_lag("--json")
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()
    assert result.exit_code == 3
    assert "127.0.0.1:9" in result.stderr
    assert result.stdout == ""
