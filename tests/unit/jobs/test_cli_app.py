"""The CLI's lazy registration: nothing heavy at start-up, every command's help unchanged."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from jobs.cli.app import COMMANDS, app, load_command

ROOT = Path(__file__).resolve().parents[3]
# What `memstream --help` must not wait for (seconds each to import).
HEAVY = ["torch", "spacy", "sklearn", "chromadb", "fastapi", "flair", "pyflink", "faust"]


def loaded_after(statement: str) -> list[str]:
    """The HEAVY packages in sys.modules after running ``statement`` in a fresh interpreter."""
    code = (
        f"import json, sys\n{statement}\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return list(json.loads(done.stdout))


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert loaded_after("import jobs.cli.app") == []


def test_the_root_help_imports_no_command_module() -> None:
    statement = (
        "from typer.testing import CliRunner\n"
        "from jobs.cli.app import app\n"
        "result = CliRunner().invoke(app, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "assert not [m for m in sys.modules if m.startswith('jobs.cli.') and m != 'jobs.cli.app']"
    )
    assert loaded_after(statement) == []


def test_lag_help_loads_neither_kafka_nor_the_stages() -> None:
    # `memstream lag --help` must start fast too: its module defers the rest.
    statement = "import jobs.cli.lag\nassert 'confluent_kafka' not in sys.modules"
    assert loaded_after(statement) == []


def first_paragraph(command: typer.core.TyperCommand | typer.core.TyperGroup) -> str:
    text = inspect.cleandoc(command.short_help or command.help or "")
    return text.split("\n\n")[0].replace("\n", " ").strip()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_summary_is_the_first_paragraph_of_the_commands_help(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    assert COMMANDS[name].summary == first_paragraph(command)  # type: ignore[arg-type]


def test_the_root_help_lists_every_command_in_order() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    listed = [line.split()[1] for line in result.output.splitlines() if line.startswith("│ ")]
    assert [name for name in listed if name in COMMANDS] == list(COMMANDS)
    words = " ".join(result.output.replace("│", " ").split())  # rich wraps at 80 columns
    for entry in COMMANDS.values():
        assert entry.summary in words


@pytest.mark.parametrize("name", ["lag", "worker", "archive", "replay", "publish"])
def test_a_commands_help_shows_all_its_options(name: str) -> None:
    result = CliRunner().invoke(app, [name, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    command = load_command(name)
    for param in command.params:
        for option in param.opts:
            assert option in result.output, (name, option)


@pytest.mark.parametrize(("group", "sub"), [("infra", "up"), ("audit", "diff"), ("train", "ner")])
def test_a_groups_subcommands_resolve(group: str, sub: str) -> None:
    result = CliRunner().invoke(app, [group, sub, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert f"memstream {group} {sub}" in result.output


def test_an_unknown_command_is_a_usage_error_with_a_suggestion() -> None:
    result = CliRunner().invoke(app, ["lagg"])
    assert result.exit_code == 2
    assert "lag" in result.output


def test_the_archive_default_is_the_connectors() -> None:
    from connectors.chroma_memory import ARCHIVE_AFTER
    from jobs.cli.archive import DEFAULT_DAYS

    assert ARCHIVE_AFTER.days == DEFAULT_DAYS and ARCHIVE_AFTER.seconds == 0
