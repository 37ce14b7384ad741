"""``memstream hints --tenant T [--user U]``: follow the hints pushed to agents.

Reads ``memory.hints`` (read_committed, no consumer group: followers never
disturb each other or leave anything behind) and prints each hint of the
tenant, or of one of its users, as it is committed: a header line (hint id,
tenant:user, turn, why it fired) and the prompt-ready context, or one JSON
document per line with ``--json``.
"""

from __future__ import annotations

import re
from typing import Annotated

import typer
from rich.console import Console

from jobs.cli.publish import EXIT_BROKER
from schemas.hints import MemoryHint

EXIT_USAGE = 2
_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")  # schemas._base.Identifier

_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def header(hint: MemoryHint) -> str:
    """One line naming the hint: id, whose, which turn, why it fired."""
    why = ", ".join(f"{s.name} ({s.evidence})" for s in hint.signals)
    return (
        f"── {hint.hint_id} · {hint.key} · turn {hint.turn_index} of {hint.session_id} "
        f"at {hint.ts.isoformat()} · {hint.reason}: {why}"
    )


def hints(
    tenant: Annotated[str, typer.Option(help="The tenant whose hints to follow.")],
    user: Annotated[
        str | None, typer.Option(help="Only this user's hints [default: every user's].")
    ] = None,
    from_beginning: Annotated[
        bool,
        typer.Option(
            "--from-beginning", help="Start with the hints still on the topic, oldest first."
        ),
    ] = False,
    count: Annotated[
        int | None, typer.Option(min=1, help="Exit after this many hints [default: never].")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One MemoryHint JSON document per line.")
    ] = False,
    namespace: Annotated[
        str, typer.Option(help="Prefix of the topic name (tests, shadow runs).")
    ] = "",
) -> None:
    """Follow the hints pushed to agents on memory.hints, for one tenant (or user), until Ctrl-C.

    A hint is published by the sink when a user turn needed memory (a
    retrieval trigger fired): the prompt-ready context recalled for that
    turn, with sources, the signals that fired and the user's current
    behaviour items. Only what is committed after the start is shown, unless
    --from-beginning.

    Exit codes: 0 stopped (Ctrl-C or --count reached); 2 bad arguments;
    3 the broker or the topic cannot be reached.
    """
    from jobs.serve.hint_feed import KafkaHintFeed
    from memstream.settings import get_settings
    from schemas.topics import Topics

    for name, value in (("--tenant", tenant), ("--user", user)):
        if value is not None and not _ID.match(value):
            _err.print(f"error: {name} must match {_ID.pattern}", markup=False)
            raise typer.Exit(EXIT_USAGE)
    settings = get_settings()
    topic = Topics(namespace).hints
    feed = KafkaHintFeed(settings.kafka.bootstrap, topic).follow(
        tenant, user, from_beginning=from_beginning
    )
    whose = f"{tenant}:{user}" if user else f"every user of {tenant}"
    shown, positioned = 0, False
    try:
        for hint in feed:
            if hint is None:
                if not positioned:  # the follower's first yield: reading from here on
                    _err.print(f"following {topic} for {whose} (Ctrl-C to stop)", markup=False)
                    positioned = True
                continue
            if as_json:
                print(hint.model_dump_json(), flush=True)
            else:
                _out.print(header(hint), markup=False)
                _out.print(hint.context + "\n", markup=False)
            shown += 1
            if count is not None and shown >= count:
                break
    except KeyboardInterrupt:
        pass
    except Exception as exc:  # the broker down, the topic missing: say which
        _err.print(f"error: cannot follow {topic}: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    finally:
        feed.close()


if __name__ == "__main__":
    typer.run(hints)
