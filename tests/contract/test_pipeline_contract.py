"""Pipeline behaviours every backend must show (AWS's documented rules)."""

import json
import math

import pytest

from fleetlab.composition.pipeline import TRANSIENT_BACKOFF, Fleet
from fleetlab.composition.topology import experiment_queue, new_prefix
from fleetlab.core.errors import AlreadyInProgress, InvalidInput, LeaseLost, ModelError, Timeout
from fleetlab.core.faults import Crash, CrashPoint, FaultPlan, Latency
from fleetlab.core.ledger import EffectsLedger
from fleetlab.core.tracing import Tracer
from fleetlab.services.agents.model import FakeModel, LatencyProfile, ModelResult
from fleetlab.services.events.envelope import Envelope
from fleetlab.services.sqs.esm import BatchPoller
from fleetlab.services.sqs.messages import held
from fleetlab.services.sqs.worker import QueueWorker
from fleetlab.services.state.idempotency import Claim, IdempotencyStore

pytestmark = pytest.mark.contract


def step(n, agent_class="researcher", **extra):
    return Envelope(f"alert-{n}", f"conv-{n}", 1, agent_class, **extra)


def quick_model(backend):
    """Virtual clock: production-like minutes. Real clock: fractions of a second."""
    if backend.clock.virtual:
        return FakeModel(seed=1, latency=LatencyProfile(p50=90, p95=420))
    return FakeModel(seed=1, latency=LatencyProfile(p50=0.05, p95=0.2))


def poll_wait(backend):
    """Long-poll seconds for workers: 0 on the virtual clock, one service second where delivery is asynchronous."""
    return backend.receive_wait


def past(backend, queue):
    """Lab seconds after a receive by which the message is surely visible again: its timeout, plus one
    second of service time (an emulator may redeliver up to ~1 s late); one second on the virtual clock."""
    return queue.visibility_timeout + backend.clock.scale


def ticket_filer(delivery):
    """A naive consumer: files a ticket for every delivery, no idempotency."""
    delivery.record_effect(kind="ticket")
    return "filed"


def send_steps(backend, queue, count, agent_class="coder"):
    """Put steps alert-0 .. alert-(count-1) straight on ``queue``, one message each."""
    for n in range(count):
        backend.client("sqs").send_message(QueueUrl=queue.url, MessageBody=json.dumps(step(n, agent_class).detail()))


def receive_at_least(backend, url, count, *, seconds=10.0):
    """Long-poll ``url`` until ``count`` messages came (the bus delivers asynchronously on some backends)."""
    sqs = backend.client("sqs")
    messages = []

    def enough():
        messages.extend(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", []))
        return len(messages) >= count

    backend.clock.wait_until(enough, timeout=seconds, what=f"{count} messages on {url}")
    return messages


def test_rules_route_each_agent_class_to_its_own_queue(backend, topology):
    fleet = Fleet(backend, topology, model=quick_model(backend))
    fleet.submit(step(1, "researcher"), step(2, "coder"), step(3, "researcher"))
    routed = {}
    for agent_class, expected in (("researcher", 2), ("coder", 1)):
        messages = receive_at_least(backend, topology.queue(agent_class).url, expected)
        routed[agent_class] = sorted(json.loads(m["Body"])["detail"]["trace_id"] for m in messages)
    assert routed == {"researcher": ["alert-1", "alert-3"], "coder": ["alert-2"]}


def test_a_received_message_is_hidden_then_redelivered(backend, topology):
    queue = topology.queue("researcher")
    sqs = backend.client("sqs")
    sqs.send_message(QueueUrl=queue.url, MessageBody=json.dumps(step(1).detail()))
    first = sqs.receive_message(QueueUrl=queue.url, AttributeNames=["All"])["Messages"][0]
    assert sqs.receive_message(QueueUrl=queue.url).get("Messages", []) == []
    backend.clock.sleep(past(backend, queue))
    again = sqs.receive_message(QueueUrl=queue.url, AttributeNames=["All"])["Messages"][0]
    assert again["MessageId"] == first["MessageId"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"


def test_queue_durations_and_timestamps_are_lab_time(backend):
    """Every backend speaks lab time: what a queue was given reads back (in whole service seconds), a message
    stays hidden that long, and its SentTimestamp is on the clock's time."""
    sqs, clock = backend.client("sqs"), backend.clock
    with experiment_queue(backend, new_prefix("ct"), visibility_timeout=30) as short:
        assert short.visibility_timeout == math.ceil(30 / clock.scale) * clock.scale  # 60 at x60: 1 s of service time
    with experiment_queue(backend, new_prefix("ct"), visibility_timeout=2 * clock.scale) as queue:
        attributes = sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=["All"])["Attributes"]
        assert int(attributes["VisibilityTimeout"]) == queue.visibility_timeout == 2 * clock.scale
        sent_at = clock.now()
        sqs.send_message(QueueUrl=queue.url, MessageBody="x")
        first = sqs.receive_message(QueueUrl=queue.url, AttributeNames=["All"])["Messages"][0]
        assert abs(int(first["Attributes"]["SentTimestamp"]) / 1000 - sent_at) <= clock.scale + 1  # a real second
        clock.sleep(queue.visibility_timeout * 0.75)
        assert sqs.receive_message(QueueUrl=queue.url).get("Messages", []) == []
        clock.sleep(past(backend, queue) - queue.visibility_timeout * 0.75)
        again = sqs.receive_message(QueueUrl=queue.url, AttributeNames=["All"])["Messages"][0]
        assert again["Attributes"]["ApproximateReceiveCount"] == "2"


def test_a_crash_after_the_effect_duplicates_it_without_idempotency(backend, topology):
    queue = topology.queue("researcher")
    ledger = EffectsLedger()
    crash = FaultPlan(crashes=(Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-7"),))
    worker = QueueWorker(backend, queue.url, ticket_filer, ledger=ledger, faults=crash, wait_seconds=poll_wait(backend))
    Fleet(backend, topology).submit(step(7))
    assert [o.status for o in worker.poll_once()] == ["crashed"]
    backend.clock.sleep(past(backend, queue))
    assert [(o.status, o.receive_count) for o in worker.poll_once()] == [("done", 2)]
    assert ledger.count("alert-7") == 2


def test_the_idempotent_fleet_keeps_one_effect_through_the_same_crash(backend, topology):
    crash = FaultPlan(crashes=(Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-7"),))
    fleet = Fleet(backend, topology, model=quick_model(backend), faults=crash)
    fleet.submit(step(7))
    report = fleet.run(advance=past(backend, topology.queue("researcher")))
    assert [o.status for o in report.outcomes] == ["crashed", "done"]
    assert fleet.ledger.count("alert-7") == 1
    assert "duplicate_suppressed" in [h.name for h in fleet.tracer.timeline("alert-7")]


class FlakyModel:
    """Throttled on the first call of every step, then answers: a transient model failure."""

    def invoke(self, trace_id, attempt, clock):
        if attempt == 1:
            raise ModelError(f"{trace_id}: throttled", transient=True)
        return ModelResult(trace_id, attempt, f"answer for {trace_id}", latency=0.0)


def test_a_transient_model_failure_comes_back_after_a_short_backoff(backend, topology):
    fleet = Fleet(backend, topology, model=FlakyModel())
    fleet.submit(step(1))
    backoff = min(TRANSIENT_BACKOFF, topology.queue("researcher").visibility_timeout)
    report = fleet.run(advance=backoff + 1)  # far less than the visibility timeout
    assert [o.status for o in report.outcomes] == ["failed", "done"]
    failed = next(h for h in fleet.tracer.timeline("alert-1") if h.name == "model_failed")
    assert failed.attrs == {"transient": True, "retry_in": backoff}
    assert fleet.ledger.count("alert-1") == 1


def test_a_permanent_model_failure_is_left_for_the_dlq(backend, topology):
    queue = topology.queue("researcher")  # maxReceiveCount = 3
    fleet = Fleet(backend, topology, model=FakeModel(seed=1, latency=quick_model(backend).latency,
                                                     poison=frozenset({"alert-9"})))
    fleet.submit(step(9))
    fleet.run(advance=past(backend, queue), idle_polls=5)
    parked = receive_at_least(backend, queue.dlq_url, 1)
    assert [json.loads(m["Body"])["detail"]["trace_id"] for m in parked] == ["alert-9"]
    failures = [h.attrs["transient"] for h in fleet.tracer.timeline("alert-9") if h.name == "model_failed"]
    assert failures == [False, False, False] and fleet.ledger.count("alert-9") == 0


def test_run_gives_up_on_a_step_that_never_reaches_a_queue(backend, topology):
    backend.client("events").put_rule(  # the researcher rule changed behind the fleet's back: it matches nothing
        Name=topology.rules["researcher"], EventBusName=topology.bus_name,
        EventPattern=json.dumps({"source": ["nobody"]}), State="ENABLED")
    fleet = Fleet(backend, topology)
    fleet.submit(step(8))
    with pytest.raises(Timeout, match="alert-8 published but never received") as gave_up:
        fleet.run(settle_timeout=0.5)
    assert gave_up.value.may_have_happened


def test_submit_refuses_a_step_no_rule_routes_and_publishes_nothing(backend, topology):
    fleet = Fleet(backend, topology, model=quick_model(backend))
    fleet.submit(step(1))
    published = []
    put_events = fleet.events.put_events
    fleet.events.put_events = lambda **request: published.append(request) or put_events(**request)
    with pytest.raises(InvalidInput) as refused:
        fleet.submit(step(2), step(3, "wizard"))
    assert refused.value.field == "agent_class"
    message = str(refused.value)
    assert "routes coder, researcher" in message and "'wizard' (alert-3)" in message
    assert "dropped silently" in message and "catch-all" in message and "add_unrouted" in message
    assert published == [] and fleet.submitted == ["alert-1"]
    report = fleet.run()  # what was accepted before is not lost
    assert report.count("done") == 1 and fleet.ledger.count("alert-1") == 1 and fleet.unsettled() == []


def test_enqueue_and_orchestrate_refuse_a_step_no_queue_takes(backend, topology):
    fleet = Fleet(backend, topology)
    with pytest.raises(InvalidInput, match="agent_class: this fleet routes coder, researcher; no rule routes 'wizard'"):
        fleet.enqueue(step(1), step(2, "wizard"))
    assert held(backend, topology.queue("researcher").url) == 0 and fleet.submitted == []
    with pytest.raises(InvalidInput, match="no rule routes 'wizard' \\(alert-3\\)"):
        fleet.orchestrate(step(3, "wizard"))
    assert fleet.executions == {}


def test_poison_is_dead_lettered_after_max_receive_count(backend, topology):
    queue = topology.queue("researcher")  # maxReceiveCount = 3

    def always_fails(delivery):
        raise ValueError("cannot parse the tool output")

    worker = QueueWorker(backend, queue.url, always_fails, wait_seconds=poll_wait(backend))
    Fleet(backend, topology).submit(step(9))
    receives = []
    for _ in range(5):
        receives += [o.receive_count for o in worker.poll_once()]
        backend.clock.sleep(past(backend, queue))
    assert receives == [1, 2, 3]
    parked = backend.client("sqs").receive_message(QueueUrl=queue.dlq_url, MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"])["detail"]["trace_id"] for m in parked] == ["alert-9"]


def sqs_calls(backend):
    """The SQS operations made through the backend's client from now on, in order."""
    made = []
    backend.client("sqs").meta.events.register("before-call.sqs", lambda event_name, **_: made.append(
        event_name.rsplit(".", 1)[1]))
    return made


def test_batch_deletes_delete_what_a_receive_finished_in_one_call_and_leave_the_failed(backend, topology):
    queue = topology.queue("coder")
    tracer = Tracer()

    def files_all_but_one(delivery):
        if delivery.trace_id == "alert-1":
            raise ValueError("the tool timed out")
        delivery.record_effect(kind="ticket")
        return "filed"

    worker = QueueWorker(backend, queue.url, files_all_but_one, tracer=tracer, batch_deletes=True,
                         visibility_timeout=queue.visibility_timeout, wait_seconds=poll_wait(backend))
    send_steps(backend, queue, 3)
    made = sqs_calls(backend)
    outcomes, receives = [], 0
    while len(outcomes) < 3 and receives < 10:
        outcomes += worker.poll_once(10)
        receives += 1
    assert sorted((o.trace_id, o.status) for o in outcomes) == [
        ("alert-0", "done"), ("alert-1", "failed"), ("alert-2", "done")]
    batches = made.count("DeleteMessageBatch")
    assert "DeleteMessage" not in made and 1 <= batches <= made.count("ReceiveMessage")
    deleted = {trace for trace in ("alert-0", "alert-1", "alert-2")
               if any(hop.name == "deleted" for hop in tracer.timeline(trace))}
    assert deleted == {"alert-0", "alert-2"}
    assert held(backend, queue.url) == 1  # the failed step stays, to come back after its visibility timeout


def test_a_batch_delete_whose_messages_were_purged_traces_them_as_not_deleted(backend, topology):
    if backend.name not in ("moto", "moto-server"):
        pytest.skip("what a purged message's receipt handle gets back differs by backend; moto refuses it")
    queue = topology.queue("coder")
    tracer = Tracer()
    sqs = backend.client("sqs")

    def purges_on_the_last(delivery):
        if delivery.trace_id == "alert-1":
            sqs.purge_queue(QueueUrl=queue.url)
        return "done"

    worker = QueueWorker(backend, queue.url, purges_on_the_last, tracer=tracer, batch_deletes=True,
                         visibility_timeout=queue.visibility_timeout)
    send_steps(backend, queue, 2)
    assert [o.status for o in worker.poll_once(10)] == ["done", "done"]
    assert [[hop.name for hop in tracer.timeline(trace)] for trace in ("alert-0", "alert-1")] == [
        ["received", "delete_failed"]] * 2


def test_with_batch_deletes_a_finished_message_is_deleted_before_a_slow_batch_mate_lets_it_come_back(
        backend, topology):
    queue = topology.queue("coder")
    tracer = Tracer()
    handled = []
    seen_again = []

    def quick_then_slow(delivery):
        handled.append(delivery.trace_id)
        if len(handled) == 2:  # twice the visibility timeout, heartbeated; the quick one is not
            backend.clock.sleep(2 * queue.visibility_timeout)
            seen_again.extend(backend.client("sqs").receive_message(QueueUrl=queue.url).get("Messages", []))
        return "done"

    worker = QueueWorker(backend, queue.url, quick_then_slow, tracer=tracer, batch_deletes=True,
                         heartbeat_every=queue.visibility_timeout / 3, visibility_timeout=queue.visibility_timeout,
                         wait_seconds=poll_wait(backend))
    send_steps(backend, queue, 2)
    assert [o.status for o in worker.poll_once(10)] == ["done", "done"]  # one receive, both messages
    quick, slow = ({hop.name: hop.at for hop in tracer.timeline(trace)} for trace in handled)
    assert quick["deleted"] - quick["received"] < queue.visibility_timeout  # before its visibility ran out
    assert quick["deleted"] < slow["deleted"]  # while the slow one still ran, not with it
    assert seen_again == [] and held(backend, queue.url) == 0


def test_batch_deletes_need_the_visibility_timeout_and_receive_nothing_without_it(backend, topology):
    queue = topology.queue("coder")
    worker = QueueWorker(backend, queue.url, ticket_filer, batch_deletes=True)
    send_steps(backend, queue, 1)
    with pytest.raises(InvalidInput) as refused:
        worker.poll_once(10)
    assert refused.value.field == "visibility_timeout"
    receipt = backend.client("sqs").receive_message(QueueUrl=queue.url, WaitTimeSeconds=poll_wait(backend))
    assert len(receipt.get("Messages", [])) == 1  # still visible: nothing was taken in flight


@pytest.mark.parametrize("heartbeat", [True, False], ids=["heartbeat", "no-heartbeat"])
def test_a_heartbeat_keeps_a_long_step_hidden(backend, topology, heartbeat):
    queue = topology.queue("researcher")
    sqs = backend.client("sqs")
    seen_by_another_worker = []

    def long_step(delivery):
        backend.clock.sleep(queue.visibility_timeout * 2)
        seen_by_another_worker.extend(sqs.receive_message(QueueUrl=queue.url).get("Messages", []))
        return "done"

    worker = QueueWorker(
        backend, queue.url, long_step, heartbeat_every=queue.visibility_timeout / 3 if heartbeat else None,
        visibility_timeout=queue.visibility_timeout,
    )
    sqs.send_message(QueueUrl=queue.url, MessageBody=json.dumps(step(3).detail()))
    assert [o.status for o in worker.poll_once()] == ["done"]
    assert len(seen_by_another_worker) == (0 if heartbeat else 1)


def test_the_store_lets_exactly_one_claim_win(backend, topology):
    """Two workers claim the same work at the same moment; the conditional write lets one through."""
    fleet = Fleet(backend, topology)
    slow_network = Latency(backend.client("dynamodb"), backend.clock, seconds=0.05)  # both claims in flight at once
    store = IdempotencyStore(slow_network, topology.table_name, backend.clock)

    def claim():
        try:
            return store.claim("alert-1", "researcher")
        except AlreadyInProgress:
            return "busy"

    results = backend.clock.run_together(claim, claim)
    assert sorted(type(r).__name__ for r in results) == ["Claim", "str"]
    winner = next(r for r in results if isinstance(r, Claim))
    fleet.store.complete(winner, {"ticket": 41})
    again = fleet.store.claim("alert-1", "researcher")
    assert again.result == {"ticket": 41}


def test_an_expired_lease_is_reclaimed(backend, topology):
    fleet = Fleet(backend, topology)
    dead = fleet.store.claim("alert-2", "researcher")
    backend.clock.sleep(fleet.store.lease_seconds + 1)
    taken = fleet.store.claim("alert-2", "researcher")
    assert taken.reclaimed_from == dead.owner
    with pytest.raises(LeaseLost):
        fleet.store.complete(dead, "late")


def test_partial_batch_response_deletes_only_the_successes(backend, topology):
    queue = topology.queue("coder")
    sqs = backend.client("sqs")
    send_steps(backend, queue, 4)

    def handler(event, context):
        bad = [r["messageId"] for r in event["Records"] if json.loads(r["body"])["trace_id"] == "alert-2"]
        return {"batchItemFailures": [{"itemIdentifier": i} for i in bad]}

    poller = BatchPoller(backend, queue.url, queue.arn, handler, batch_size=10)
    outcome = poller.poll_once()
    assert (outcome.received, outcome.deleted, len(outcome.failed_ids)) == (4, 3, 1)
    backend.clock.sleep(past(backend, queue))
    left = sqs.receive_message(QueueUrl=queue.url, MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"])["trace_id"] for m in left] == ["alert-2"]


def test_an_unknown_item_identifier_fails_the_whole_batch(backend, topology):
    queue = topology.queue("coder")
    send_steps(backend, queue, 3)
    poller = BatchPoller(
        backend, queue.url, queue.arn, lambda event, ctx: {"batchItemFailures": [{"itemIdentifier": "nope"}]}
    )
    outcome = poller.poll_once()
    assert outcome.deleted == 0 and "whole batch" in outcome.error


def test_a_batch_that_crashes_after_its_effects_comes_back_whole(backend, topology):
    """Lambda's function dies after its effects, before returning: nothing is deleted, every record returns."""
    queue = topology.queue("coder")
    send_steps(backend, queue, 3)

    def handler(event, context):
        for record in event["Records"]:
            context.record_effect(record, kind="ticket")
        return {"batchItemFailures": []}

    crash = FaultPlan(crashes=(Crash(CrashPoint.AFTER_EFFECT_BEFORE_DELETE, "alert-1"),))
    ledger, tracer = EffectsLedger(), Tracer()
    poller = BatchPoller(backend, queue.url, queue.arn, handler, faults=crash, ledger=ledger, tracer=tracer)
    first = poller.poll_once()
    assert (first.status, first.received, first.deleted, first.error) == ("crashed", 3, 0, "after_effect_before_delete")
    backend.clock.sleep(past(backend, queue))
    second = poller.poll_once()
    assert (second.status, second.received, second.deleted) == ("done", 3, 3)
    assert ledger.summary().duplicated == 3  # no idempotency: every effect ran twice
    hops = [(h.name, h.attrs.get("receive")) for h in tracer.timeline("alert-1")]
    assert hops == [("received", 1), ("effect", None), ("crashed", None),
                    ("received", 2), ("effect", None), ("deleted", None)]


def powertools_handler(record_handler):
    """A Lambda handler that runs ``record_handler(record, lambda_context)`` per record, as Powertools does."""
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    processor = BatchProcessor(event_type=EventType.SQS)

    def handler(event, context):
        return process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                        context=context)

    return handler


def test_powertools_partial_batch_responses_keep_only_the_failed_records(backend, topology):
    queue = topology.queue("coder")
    send_steps(backend, queue, 4)

    def record_handler(record, lambda_context):
        if json.loads(record.body)["trace_id"] == "alert-2":
            raise ValueError("the tool output is unparseable")
        lambda_context.record_effect(record, kind="ticket")

    tracer = Tracer()
    poller = BatchPoller(backend, queue.url, queue.arn, powertools_handler(record_handler), tracer=tracer)
    outcome = poller.poll_once()
    assert (outcome.status, outcome.received, outcome.deleted, len(outcome.failed_ids)) == ("failed", 4, 3, 1)
    assert poller.ledger.summary(expected={"alert-0", "alert-1", "alert-3"}).exactly_once
    assert [h.name for h in tracer.timeline("alert-2")] == ["received", "failed"]


def test_a_crash_before_an_effect_kills_the_whole_invocation_even_under_powertools(backend, topology):
    """A killed process runs no except clause: Powertools must not turn the crash into one failed record."""
    queue = topology.queue("coder")
    send_steps(backend, queue, 2)
    handler = powertools_handler(lambda record, lambda_context: lambda_context.record_effect(record))
    crash = FaultPlan(crashes=(Crash(CrashPoint.BEFORE_EFFECT, "alert-1"),))
    outcome = BatchPoller(backend, queue.url, queue.arn, handler, faults=crash).poll_once()
    assert (outcome.status, outcome.deleted, len(outcome.failed_ids)) == ("crashed", 0, 2)


def test_the_orchestrator_round_trip_succeeds_through_the_bus(backend, topology):
    fleet = Fleet(backend, topology, model=quick_model(backend))
    fleet.orchestrate(step(5, payload={"question": "q"}))
    fleet.run()
    assert fleet.finish_executions() == {"alert-5": "SUCCEEDED"}
    hops = [h.name for h in fleet.tracer.timeline("alert-5")]
    assert hops[0] == "execution_started" and hops[-1] == "execution_succeeded"
    assert {"received", "claimed", "effect", "callback", "deleted"} <= set(hops)


def test_large_payloads_travel_by_claim_check(backend, topology):
    fleet = Fleet(backend, topology, model=quick_model(backend))
    big = {"document": "x" * 300_000}
    fleet.submit(step(6, payload=big))
    message = receive_at_least(backend, topology.queue("researcher").url, 1)[0]
    detail = json.loads(message["Body"])["detail"]
    assert "payload" not in detail and detail["payload_ref"]["bytes"] > 300_000
    assert fleet.claimcheck.fetch(Envelope.from_detail(detail)) == big


def test_a_step_slower_than_the_visibility_timeout_runs_twice(backend, topology):
    """Two healthy workers, one step that outlives its visibility timeout: two effects."""
    queue = topology.queue("researcher")
    ledger = EffectsLedger()

    def slow_step(delivery):
        backend.clock.sleep(queue.visibility_timeout * 2)  # a clear margin: emulators redeliver up to ~1 s late
        delivery.record_effect(kind="ticket")

    workers = [QueueWorker(backend, queue.url, slow_step, name=f"w{i}", ledger=ledger) for i in (1, 2)]
    Fleet(backend, topology).submit(step(4))
    horizon = queue.visibility_timeout * 5
    interval = queue.visibility_timeout / 30
    outcomes = backend.clock.run_together(*(lambda w=w: w.run_for(horizon, poll_interval=interval) for w in workers))
    assert ledger.count("alert-4") == 2
    assert sorted(o.receive_count for batch in outcomes for o in batch) == [1, 2]
    assert {e.actor for e in ledger.effects("alert-4")} == {"w1", "w2"}


def test_a_callback_that_beats_the_heartbeat_timer_still_ends_the_execution(backend, topology, monkeypatch):
    """moto sets up a task's heartbeat timer after publishing its event; a callback that lands
    first is missed until the next heartbeat window (900 s here). Slow that set-up down so every
    callback lands first: the fleet's follow-up heartbeat must still end the execution."""
    if backend.name not in ("moto", "moto-server"):
        pytest.skip("reproduces a moto race by slowing moto's own code")
    import threading

    from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackEndpoint

    original = CallbackEndpoint.setup_heartbeat_endpoint
    callback_sent = threading.Event()

    def late_setup(self, heartbeat_seconds):
        callback_sent.wait(timeout=10)  # the worker's SendTaskSuccess goes first, every time
        return original(self, heartbeat_seconds)

    monkeypatch.setattr(CallbackEndpoint, "setup_heartbeat_endpoint", late_setup)
    fleet = Fleet(backend, topology, model=quick_model(backend))
    fleet.orchestrate(step(6, payload={"question": "q"}))
    fleet.run()
    callback_sent.set()
    assert fleet.finish_executions(timeout=15) == {"alert-6": "SUCCEEDED"}
    assert "callback_nudged" in [h.name for h in fleet.tracer.timeline("alert-6")]
