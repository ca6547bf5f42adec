"""Every ``fleetlab`` command's ``--help``: it exits 0, shows the command's help text and lists its flags.

The tooling's and the instructor's commands arrive through the ``fleetlab.commands`` entry points;
where their package is missing, the name still parses and says what to install.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from fleetlab.cli import ELSEWHERE, build_cli, main

REPO = Path(__file__).resolve().parents[1]

FLAGS = {
    ("doctor",): ["--backend", "--refresh"],
    ("demo",): ["--backend", "--events", "--orchestrated", "--seed", "--crash"],
    ("progress",): ["--lab"],
    ("cost",): ["[LAB]..."],
    ("keda-size",): ["SCALEDOBJECT.yaml", "--visible", "--in-flight", "--delayed", "--queue-url", "--backend",
                     "--current", "--json"],
    ("capacity",): ["--conversations-per-minute", "--steps", "--step-seconds", "--region", "--json"],
    ("cleanup",): ["--prefix", "--backend", "--yes"],
    ("assign",): ["--solutions", "--out", "--check"],
    ("release",): ["OUT", "--course", "--force"],
    ("grade",): ["PATH...", "--out", "--feedback", "--report", "--shard", "--cell-timeout", "--notebook-timeout",
                 "--grading-timeout", "--workers"],
    ("handout",): ["RELEASE", "--hub", "--homes", "--token", "--start-timeout", "--learner"],
    ("collect",): ["--labs", "--out", "--run", "--on-time", "--hub", "--homes", "--token", "--learner"],
    ("feedback",): ["return"],
    ("feedback", "return"): ["FEEDBACK", "--collected", "--hub", "--homes", "--token", "--learner"],
    ("gradebook",): ["merge", "adjust", "canvas", "gradescope", "autograder"],
    ("gradebook", "merge"): ["RUN.shard-I-of-N.json...", "--out", "--report"],
    ("gradebook", "adjust"): ["GRADES.csv", "--out", "--regrade", "--collected", "--late-penalty", "--overrides"],
    ("gradebook", "canvas"): ["GRADES.csv", "--roster", "--out", "--column"],
    ("gradebook", "gradescope"): ["RUN.shard-I-of-N.json", "--learner", "--collected", "--late-penalty", "--out",
                                 "--hidden"],
    ("gradebook", "autograder"): ["OUT.zip", "--lab", "--course", "--hidden"],
    ("bench",): ["--out", "--backends", "--steps", "--only"],
    ("localstack",): ["up", "down", "status", "test"],
    ("localstack", "up"): ["--timeout"],
    ("localstack", "down"): [],
    ("localstack", "status"): [],
    ("localstack", "test"): ["--only", "--labs", "--goal", "--limit", "--fidelity"],
}
"""Each command (as typed after ``fleetlab``) and the flags, arguments or actions its help lists."""


def command_at(path: tuple[str, ...]) -> click.Command:
    command: click.Command = build_cli()
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def listed(help_text: str) -> set[str]:
    """The flags, arguments and subcommands the help lists: each row's first words, in its sections."""
    terms, in_section = set(), False
    for line in help_text.splitlines():
        if line and not line.startswith(" "):
            in_section = line.endswith(":")
        elif in_section and line.startswith("  ") and not line.startswith("   "):
            terms.update(word.rstrip(",") for word in line.split("  ")[1].split())
    return terms


@pytest.mark.parametrize("path", list(FLAGS), ids=" ".join)
def test_each_command_s_help_shows_its_text_and_its_flags(path):
    done = CliRunner().invoke(build_cli(), [*path, "--help"], prog_name="fleetlab")
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith(f"Usage: fleetlab {' '.join(path)} ")
    assert " ".join(command_at(path).help.split()) in " ".join(done.stdout.split())
    assert {*FLAGS[path], "-h", "--help"} <= listed(done.stdout), done.stdout


def test_every_command_has_its_help_tested():
    group = build_cli()
    tested = {path[0] for path in FLAGS}
    assert tested == set(group.commands)
    for name in ("localstack", "gradebook", "feedback"):
        subgroup = group.commands[name]
        assert isinstance(subgroup, click.Group)
        assert {path[1] for path in FLAGS if len(path) == 2 and path[0] == name} == set(subgroup.commands)


def test_the_group_s_help_lists_every_command_with_its_short_help():
    done = CliRunner().invoke(build_cli(), ["-h"], prog_name="fleetlab")
    assert done.exit_code == 0
    text = " ".join(done.stdout.split())
    for name, command in build_cli().commands.items():
        assert f"{name} {command.get_short_help_str(limit=1000)}" in text


def test_no_command_shows_the_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "Commands:" in capsys.readouterr().err


def test_the_packages_entry_points_name_click_commands():
    """tools/ and instructor/ declare one entry point per subcommand of ``ELSEWHERE``, each a click command."""
    declared = {}
    for folder in ("tools", "instructor"):
        project = tomllib.loads((REPO / folder / "pyproject.toml").read_text())["project"]
        declared.update(project["entry-points"]["fleetlab.commands"])
    assert set(declared) == set(ELSEWHERE)
    for name, target in declared.items():
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command) and command.name == name


@pytest.mark.parametrize(("argv", "install"), [(["grade", "nb.ipynb", "--workers", "3"], "instructor"),
                                               (["bench"], "instructor"), (["localstack", "up"], "tools")])
def test_a_command_whose_package_is_missing_parses_and_says_what_to_install(argv, install, monkeypatch, capsys):
    monkeypatch.setattr("fleetlab.cli.entry_points", lambda group: [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"fleetlab {argv[0]}: `fleetlab {argv[0]}` comes with" in err
    assert "which is not installed here" in err and f"`pip install -e {install}` (make venv does)" in err
    assert main([argv[0], "--help"]) == 0
    assert "(not installed: comes with" in capsys.readouterr().out
