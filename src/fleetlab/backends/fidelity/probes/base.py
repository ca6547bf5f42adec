"""What a probe is: the features it reports on, what it observed, and how it registers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fleetlab.backends.fidelity.probes.scratch import Scratch
from fleetlab.backends.fidelity.table import Finding


@dataclass(frozen=True)
class Feature:
    """What a probe reports on: its id, AWS's documented behaviour, the workaround."""

    id: str
    title: str
    aws: str
    workaround: str

    def finding(self, observation: Observation) -> Finding:
        return Finding(
            feature=self.id,
            title=self.title,
            aws=self.aws,
            observed=observation.observed,
            matches_aws=observation.matches_aws,
            workaround="" if observation.matches_aws else self.workaround,
        )


@dataclass(frozen=True)
class Observation:
    """What a backend did, in words, and whether that is what AWS documents."""

    observed: str
    matches_aws: bool


Measure = Callable[[Scratch], "Observation | tuple[Observation, ...]"]


@dataclass(frozen=True)
class Probe:
    """One experiment on the backend, reporting one observation per feature."""

    features: tuple[Feature, ...]
    measure: Measure


def register(into: list[Probe], *features: Feature) -> Callable[[Measure], Measure]:
    """Register the decorated function as the probe of ``features``, after those already in ``into``."""

    def add(measure: Measure) -> Measure:
        into.append(Probe(features, measure))
        return measure

    return add
