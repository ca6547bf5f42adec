"""``fleetlab cost``: what a lab would cost on real AWS, without opening any backend."""

from __future__ import annotations

import click

from fleetlab.cli.output import stdout_console
from fleetlab.composition import cost


def counted_subjects(ctx: click.Context, param: click.Parameter, subjects: tuple[str, ...]) -> tuple[str, ...]:
    """``LAB...``: subjects whose calls were counted (a lab as ``3`` or ``03``); BadParameter names the others and
    lists the counted ones."""
    from fleetlab.course.grading.registry import lab_id

    counted = list(cost.load_calls()["subjects"])
    unknown = [subject for subject in subjects if lab_id(subject) not in counted]
    if unknown:
        raise click.BadParameter(f"no calls are counted for {', '.join(map(repr, unknown))}; "
                                 f"choose from {', '.join(counted)}", ctx, param)
    return tuple(lab_id(subject) for subject in subjects)


@click.command("cost", short_help="estimate what a lab costs on real AWS (nothing is opened or made)",
               help="Print the real-AWS cost estimate that FLEETLAB_BACKEND=aws shows before it makes anything.")
@click.argument("subjects", nargs=-1, metavar="[LAB]...", callback=counted_subjects,
                help="lab ids (00, 01, ...), demo or contract (default: every one counted)")
def command(subjects: tuple[str, ...]) -> int:
    console = stdout_console()
    for number, subject in enumerate(subjects or cost.load_calls()["subjects"]):
        if number:
            console.print()
        console.print(cost.estimate(subject).text(), markup=False, highlight=False)
    return 0
