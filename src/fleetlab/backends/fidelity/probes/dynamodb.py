"""DynamoDB probes: TTL deletion.

Measuring jumps a virtual clock (the whole process's time) 3 days forward:
AWS deletes an expired item within a few days (its Developer Guide names no
firmer bound), so an item still there after 3 days is the divergence worth
showing. ``probes.measure`` takes the jump back afterwards. On a real clock the
finding is "not measured" (AWS may take days) and *not* matching AWS: the table
never claims a fidelity it did not see, and the workaround (treat expired items
as absent) is right on AWS too.
"""

from __future__ import annotations

from functools import partial

from fleetlab.backends.fidelity.probes.base import Feature, Observation, Probe, register
from fleetlab.backends.fidelity.probes.scratch import Scratch

PROBES: list[Probe] = []
"""This service's probes, in the order their findings appear in a table."""

_probes = partial(register, PROBES)

_TTL_WAIT_SECONDS = 3 * 24 * 3600


@_probes(
    Feature(
        "dynamodb.ttl_deletion",
        "An item whose TTL attribute has passed",
        aws="deleted by the service in the background, within a few days of expiry (no firmer bound)",
        workaround="treat expired items as absent on read (compare the TTL attribute with the clock), as on AWS",
    )
)
def _ttl_deletion(scratch: Scratch) -> Observation:
    if not scratch.backend.clock.virtual:
        return Observation("not measured: AWS may take days, too long for a probe on a real clock", False)
    ddb = scratch.client("dynamodb")
    table = scratch.table("ttl", key="pk")
    ddb.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires"})
    expired_at = int(scratch.backend.clock.now()) - 3600
    ddb.put_item(TableName=table, Item={"pk": {"S": "expired"}, "expires": {"N": str(expired_at)}})
    scratch.let_pass(_TTL_WAIT_SECONDS)
    item = ddb.get_item(TableName=table, Key={"pk": {"S": "expired"}}, ConsistentRead=True).get("Item")
    if item is not None:
        return Observation("never deleted: still there 3 days after expiry", False)
    return Observation("deleted within 3 days of expiry", True)
