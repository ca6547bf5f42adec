"""The distributed token governor: one quota of model tokens per window, shared by every worker
through one DynamoDB item.

Five hundred workers on different machines cannot share a variable, and a
fixed slice per worker wastes the quota an idle worker holds. So the quota
is one counter item (``pk`` = the quota's name, ``sk`` = ``"quota"``) with
``window_start``, ``quota_used`` and ``quota_version``, and a draw is a
compare-and-set: the worker writes ``quota_used + tokens`` on condition that
nobody wrote since it last saw the counter and the new count fits under the
quota (``state.conditions.DRAWABLE``); the first draw of a window resets the
counter (``WINDOW_ROLLED_OVER``). The counter therefore never exceeds the
quota, whatever the workers race.

A conditional write that fails is one of two things, told apart by the item
DynamoDB returns with the failure: *exhaustion* (the current window has no
room for the draw: the draw is refused) or a *conflict* (another worker
wrote first: the draw retries at once on the fresh count). Both are counted.

``TokenGovernor`` is the counter; ``Allowance`` is one worker's side of it:
it draws a batch of tokens at once and spends them locally, so a model call
costs a write only when the allowance runs short. ``batch=1`` is the naive
governor, one conditional write per model call. The price of a bigger
batch is slack: tokens drawn but not spent when the window ends expire,
stranded; ``give_back`` returns them while the window lasts. A share of the
quota (``headroom``) is kept back for priority draws (retries, urgent work).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field, replace
from typing import Any

from botocore.exceptions import ClientError

from fleetlab.backends.responses import error_code
from fleetlab.core.clock import Clock
from fleetlab.core.errors import InvalidInput, QuotaExhausted
from fleetlab.services.state.conditions import (
    DRAWABLE,
    RETURNABLE,
    ROOM,
    SEEN,
    TOKENS,
    WINDOW,
    WINDOW_ROLLED_OVER,
    number,
    string,
)

COUNTER_SORT_KEY = "quota"
DRAW_UPDATE = "SET quota_used = quota_used + :tokens, quota_version = :next"
OPEN_WINDOW_UPDATE = "SET window_start = :window, quota_used = :tokens, quota_version = :next"
RETURN_UPDATE = "SET quota_used = quota_used - :tokens, quota_version = quota_version + :one"


@dataclass(frozen=True)
class Quota:
    """``tokens`` per ``window_seconds``, named ``name``; ``headroom`` is the share kept for priority draws.

    Raises InvalidInput naming the field for a name that is empty, tokens or
    a window that is not positive, or a headroom outside [0, 1).
    """

    name: str
    tokens: int
    window_seconds: float = 60.0
    headroom: float = 0.0

    def __post_init__(self) -> None:
        if not self.name:
            raise InvalidInput("name", "must name the quota (it keys the counter item)")
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or self.tokens <= 0:
            raise InvalidInput("tokens", f"must be a positive whole number of tokens per window, got {self.tokens!r}")
        if not self.window_seconds > 0:
            raise InvalidInput("window_seconds", f"must be positive, got {self.window_seconds!r}")
        if not 0 <= self.headroom < 1:
            raise InvalidInput("headroom", f"must be a share in [0, 1), got {self.headroom!r}",
                               hint="0 keeps nothing back; 0.1 keeps a tenth of the quota for priority draws")

    @property
    def reserved(self) -> int:
        """Tokens of each window only a priority draw may use."""
        return math.floor(self.tokens * self.headroom)

    def usable(self, *, priority: bool = False) -> int:
        """Tokens per window a draw may bring the counter up to."""
        return self.tokens if priority else self.tokens - self.reserved

    def check_draw(self, name: str, tokens: int, *, priority: bool = False, hint: str = "") -> None:
        """Raise InvalidInput naming ``name`` unless ``tokens`` is a whole number one window can grant."""
        usable = self.usable(priority=priority)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 < tokens <= usable:
            raise InvalidInput(name, f"must be 1..{usable} tokens (the usable quota per window), got {tokens!r}",
                               hint=hint)


@dataclass(frozen=True)
class CounterView:
    """The counter as one worker last saw it. ``version`` 0: no counter item yet."""

    window_start: float = 0.0
    used: int = 0
    version: int = 0


@dataclass(frozen=True)
class Draw:
    """One draw's outcome: ``granted`` tokens (0 when refused) for the window at ``window_start``."""

    granted: int
    window_start: float
    seen: CounterView
    conflicts: int = 0


@dataclass(frozen=True)
class GovernorStats:
    """What the counter saw: conditional ``writes`` (failed ones too: DynamoDB charges them), draws
    ``granted``, draws refused as ``exhausted``, ``conflicts`` (writes lost to another worker), and
    tokens ``drawn`` and ``returned``."""

    writes: int = 0
    granted: int = 0
    exhausted: int = 0
    conflicts: int = 0
    returns: int = 0
    drawn: int = 0
    returned: int = 0


class TokenGovernor:
    """The shared counter of one ``quota`` in a DynamoDB table keyed (pk, sk), on ``clock``'s windows.

    Windows are aligned to the clock: the window of time t starts at
    ``floor(t / window_seconds) * window_seconds``. Safe to share between
    threads; ``stats`` counts every worker's writes.
    """

    def __init__(self, dynamodb: Any, table: str, clock: Clock, quota: Quota) -> None:
        self.dynamodb = dynamodb
        self.table = table
        self.clock = clock
        self.quota = quota
        self._stats = GovernorStats()
        self._lock = threading.Lock()

    @property
    def key(self) -> dict[str, Any]:
        return {"pk": string(self.quota.name), "sk": string(COUNTER_SORT_KEY)}

    @property
    def stats(self) -> GovernorStats:
        with self._lock:
            return self._stats

    def window_start(self, at: float | None = None) -> float:
        """Start of the window holding ``at`` (default: now)."""
        at = self.clock.now() if at is None else at
        return math.floor(at / self.quota.window_seconds) * self.quota.window_seconds

    def next_window(self, at: float | None = None) -> float:
        """When the window holding ``at`` (default: now) ends and its quota is whole again."""
        return self.window_start(at) + self.quota.window_seconds

    def read(self) -> CounterView:
        """The counter as it is now (a strongly consistent read)."""
        item = self.dynamodb.get_item(TableName=self.table, Key=self.key, ConsistentRead=True).get("Item")
        return _view(item)

    def used(self) -> int:
        """Tokens drawn in the current window (0 when the counter still counts an older one)."""
        view = self.read()
        return view.used if view.window_start == self.window_start() else 0

    def draw(self, tokens: int, seen: CounterView, *, priority: bool = False, at: float | None = None) -> Draw:
        """Draw ``tokens`` for the window holding ``at`` (default: now), starting from the counter as ``seen``.

        Returns a granted Draw, or one with ``granted`` 0 when the window has
        no room (exhaustion). A conflict retries at once on the count the
        failed write returned. Raises InvalidInput when ``tokens`` is not
        positive or more than one window can ever grant.
        """
        self.quota.check_draw("tokens", tokens, priority=priority)
        usable = self.quota.usable(priority=priority)
        conflicts = 0
        while True:
            window = self.window_start(at)
            current = self._try_draw(tokens, seen, window, usable)
            if current is None:
                self._count(writes=1, granted=1, drawn=tokens)
                after = CounterView(window, (seen.used if seen.window_start == window else 0) + tokens, seen.version + 1)
                return Draw(tokens, window, after, conflicts)
            if current.window_start == window and current.used + tokens > usable:
                self._count(writes=1, exhausted=1)
                return Draw(0, window, current, conflicts)
            self._count(writes=1, conflicts=1)
            conflicts += 1
            seen = current

    def give_back(self, tokens: int, window_start: float) -> bool:
        """Return ``tokens`` drawn for the window at ``window_start``. False when that window is over
        (the tokens expired with it); nothing is returned then."""
        if tokens <= 0:
            return False
        try:
            self.dynamodb.update_item(
                TableName=self.table, Key=self.key, UpdateExpression=RETURN_UPDATE, ConditionExpression=RETURNABLE,
                ExpressionAttributeValues={":tokens": number(tokens), WINDOW: number(window_start), ":one": number(1)},
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            self._count(writes=1)
            return False
        self._count(writes=1, returns=1, returned=tokens)
        return True

    def _try_draw(self, tokens: int, seen: CounterView, window: float, usable: int) -> CounterView | None:
        """One conditional write: None when it landed, else the counter as the failure returned it."""
        opening = seen.version == 0 or seen.window_start < window
        values = {SEEN: number(seen.version), WINDOW: number(window), TOKENS: number(tokens),
                  ":next": number(seen.version + 1)}
        if not opening:
            values[ROOM] = number(usable - tokens)
        try:
            self.dynamodb.update_item(
                TableName=self.table, Key=self.key,
                UpdateExpression=OPEN_WINDOW_UPDATE if opening else DRAW_UPDATE,
                ConditionExpression=WINDOW_ROLLED_OVER if opening else DRAWABLE,
                ExpressionAttributeValues=values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            item = exc.response.get("Item")
            return _view(item) if item else self.read()  # an emulator that does not return the item: read it
        return None

    def _count(self, **increments: int) -> None:
        with self._lock:
            self._stats = replace(self._stats, **{
                name: getattr(self._stats, name) + amount for name, amount in increments.items()
            })


@dataclass
class Allowance:
    """One worker's allowance: tokens drawn from ``governor`` in batches of ``batch`` and spent locally.

    ``spend`` takes a model call's tokens from the allowance, drawing
    ``max(batch, shortfall)`` when it runs short; ``ensure`` only tops it up
    (the dispatcher's admission test). Tokens left when the window rolls
    over expire (``expired``); ``give_back`` returns them before that.
    ``priority`` draws may use the quota's headroom. Not shared between threads.
    """

    governor: TokenGovernor
    batch: int = 1
    priority: bool = False
    remaining: int = 0
    window_start: float = 0.0
    spent: int = 0
    expired: int = 0
    returned: int = 0
    seen: CounterView = field(default_factory=CounterView)

    def __post_init__(self) -> None:
        self.governor.quota.check_draw("batch", self.batch, priority=self.priority,
                                       hint="1 is the naive governor: one conditional write per model call")
        self.seen = self.governor.read()

    def ensure(self, tokens: int, at: float | None = None) -> bool:
        """Make sure ``tokens`` can be spent in the window holding ``at`` (default: now), drawing if short.
        False when the governor refuses."""
        self._expire_if_rolled_over(at)
        if self.remaining >= tokens:
            return True
        draw = self.governor.draw(max(self.batch, tokens - self.remaining), self.seen, priority=self.priority, at=at)
        self.seen = draw.seen
        if not draw.granted:
            return False
        if draw.window_start != self.window_start:  # the window rolled over while the draw retried
            self._expire()
            self.window_start = draw.window_start
        self.remaining += draw.granted
        return self.remaining >= tokens

    def spend(self, tokens: int, at: float | None = None) -> None:
        """Take ``tokens`` for one model call at ``at`` (default: now). Raises QuotaExhausted when the governor
        has no room for them."""
        if not self.ensure(tokens, at):
            raise QuotaExhausted(
                f"quota {self.governor.quota.name!r} has no room for {tokens} tokens in this window; "
                "hold the work on its queue until the window rolls over",
                retry_at=self.governor.next_window(at),
            )
        self.remaining -= tokens
        self.spent += tokens

    def give_back(self, at: float | None = None) -> int:
        """Return the unspent tokens to the counter at ``at`` (default: now); how many went back (0 if the
        window ended: they expired)."""
        self._expire_if_rolled_over(at)
        tokens, self.remaining = self.remaining, 0
        if tokens and self.governor.give_back(tokens, self.window_start):
            self.returned += tokens
            return tokens
        self.expired += tokens
        return 0

    def _expire_if_rolled_over(self, at: float | None) -> None:
        if self.remaining and self.governor.window_start(at) != self.window_start:
            self._expire()

    def _expire(self) -> None:
        self.expired += self.remaining
        self.remaining = 0


def _view(item: dict[str, Any] | None) -> CounterView:
    if not item:
        return CounterView()
    return CounterView(
        float(item["window_start"]["N"]), int(float(item["quota_used"]["N"])), int(float(item["quota_version"]["N"]))
    )
