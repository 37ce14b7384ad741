"""``memstream trace ID [--namespace NS] [--json]``: where one memory came from.

For a fact version (``f_…``): the stored fact, its source event fetched from
Kafka at the recorded topic/partition/offset, the parse/extract decisions
(recomputed on that event) and the review outcomes (recorded in the operations
that wrote it), the operations on ``memory.ops`` that name it, and the version
chain of its (subject, predicate). For a remembered turn (``e_…``): the stored
episode (and what outdated it), its source event, its operations and the facts
the same turn produced. Logic in jobs/ops/trace.py and trace_episode.py;
rendering in jobs/ops/trace_render.py.

Exit codes: 0 full trace; 1 the source event could not be verified (gone from
the log, or another event at the offset) — what the stores know is still
printed; 2 unknown fact id; 3 Kafka or a store could not be reached.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from jobs.cli.publish import EXIT_BROKER, EXIT_USAGE

if TYPE_CHECKING:
    from jobs.stores import Stores
    from memstream.settings import Settings

EPISODE_PREFIX = "e_"  # schemas/ids.py: episode_id (jobs/ops/trace_episode.py, not imported)

EXIT_INCOMPLETE = 1

_err = Console(stderr=True, highlight=False, soft_wrap=True)


def trace(
    fact_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="A fact version's id (f_…) or a turn's (e_…), as recall shows it."
        ),
    ],
    namespace: Annotated[
        str,
        typer.Option(
            help="Namespace of a shadow or test run: the prefix of its topics and the "
            "namespace of its stores, as `memstream run --namespace` uses it ('' is live memory)."
        ),
    ] = "",
    topic_namespace: Annotated[
        str | None,
        typer.Option(
            help="Prefix of the topics when it differs from --namespace (a replay reads "
            "live topics into a shadow namespace); default: the --namespace value."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
) -> None:
    """Trace a fact or a remembered turn: source event from Kafka, decisions, versions."""
    # Imported here: chromadb, the Neo4j driver and the NLP stages load in
    # seconds, which `memstream --help` should not wait for.
    from confluent_kafka import KafkaException
    from neo4j.exceptions import ServiceUnavailable

    from jobs.ops.trace import UnknownFact
    from jobs.ops.trace import trace as run_trace
    from jobs.ops.trace_decisions import load_stages
    from jobs.ops.trace_render import render_text, to_json
    from jobs.stores import open_stores
    from memstream.settings import get_settings

    if not fact_id.strip():
        _err.print("error: ID is empty")
        raise typer.Exit(EXIT_USAGE)
    settings = get_settings()
    try:
        stores = open_stores(settings, namespace or None)
    except Exception as exc:  # a store down: say which, exit with the service code
        _err.print(f"error: cannot open the stores: {exc!r}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    if fact_id.strip().startswith(EPISODE_PREFIX):
        _trace_episode(fact_id.strip(), settings, stores, namespace, topic_namespace, as_json)
        return
    try:
        result = run_trace(
            fact_id.strip(),
            bootstrap=settings.kafka.bootstrap,
            topic_namespace=namespace if topic_namespace is None else topic_namespace,
            neo4j=stores.semantic,
            chroma=stores.episodic,
            stages=load_stages,
        )
    except UnknownFact as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except (KafkaException, ServiceUnavailable, TimeoutError) as exc:
        _err.print(f"error: a service did not answer: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    finally:
        stores.close()
    # typer.echo, not rich: the source event must come out byte for byte
    # (rich would render emoji codes and markup-like text inside it).
    if as_json:
        typer.echo(json.dumps(to_json(result), indent=2, ensure_ascii=False))
    else:
        typer.echo("\n".join(render_text(result)))
    if result.source.problem is not None:
        _err.print(f"error: source event not verified: {result.source.problem}", markup=False)
        raise typer.Exit(EXIT_INCOMPLETE)


def _trace_episode(
    episode_id: str,
    settings: Settings,
    stores: Stores,
    namespace: str,
    topic_namespace: str | None,
    as_json: bool,
) -> None:
    from confluent_kafka import KafkaException

    from jobs.ops.trace import UnknownFact
    from jobs.ops.trace_episode import episode_json, render_episode, trace_episode
    from jobs.ops.trace_render import source_json, source_lines

    try:
        result = trace_episode(
            episode_id,
            bootstrap=settings.kafka.bootstrap,
            topic_namespace=namespace if topic_namespace is None else topic_namespace,
            chroma=stores.episodic,
        )
    except UnknownFact as exc:
        _err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except (KafkaException, TimeoutError) as exc:
        _err.print(f"error: a service did not answer: {exc}", markup=False)
        raise typer.Exit(EXIT_BROKER) from None
    finally:
        stores.close()
    if as_json:
        document = episode_json(result, source_json(result.source))
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        typer.echo("\n".join(render_episode(result, source_lines(result.source))))
    if result.source.problem is not None:
        _err.print(f"error: source event not verified: {result.source.problem}", markup=False)
        raise typer.Exit(EXIT_INCOMPLETE)


if __name__ == "__main__":
    typer.run(trace)
