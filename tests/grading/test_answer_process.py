"""The learner's answer runs in a process of its own; the judge sees data and proxies, never its code.

Each test hands an answer (defined here, so it travels by value as a
notebook's function does) to an ``AnswerHost`` and calls it from this
process, the way a harness calls it in the judge.
"""

from __future__ import annotations

import base64
import collections
import ctypes
import datetime
import decimal
import enum
import io
import os
import pickle
import socket
import sys
import time
import types

import cloudpickle
import pytest

from fleetlab.core.errors import StepFailed
from fleetlab.core.virtualclock import VirtualClock
from fleetlab.course.grading import learner, registry, run_check
from fleetlab.course.judge.answerhost import AnswerHost
from fleetlab.course.judge.codec import DataOnly, RemoteError, RemoteFailed
from fleetlab.course.judge.peer import Peer, settle_everywhere
from fleetlab.course.judge.server import keep_memory_private
from fleetlab.course.grading.registry import StopAnswer
from fleetlab.course.grading.results import CheckStatus
from fleetlab.course.grading.runner import TOO_BUSY



@pytest.fixture(scope="module")
def host():
    with AnswerHost() as answers:
        yield answers


def loaded(host, answer, check_id="99.any"):
    result = host.load(check_id, base64.b64encode(cloudpickle.dumps(answer)).decode("ascii"))
    assert result.kind == "ok", result.detail
    return result.value


def test_the_answer_runs_in_another_process_in_a_folder_of_its_own(host):
    def where():
        return os.getpid(), os.getcwd()

    pid, folder = loaded(host, where)()
    assert pid != os.getpid() and pid == host.pid
    assert "fleetlab-answers-" in folder and folder != os.getcwd()


def test_an_answer_process_leaves_no_folder_behind():
    def where():
        return os.getcwd()

    with AnswerHost() as host:
        folder = loaded(host, where)()
        assert os.path.isdir(folder)
    assert not os.path.exists(folder)


def test_an_answer_forked_from_a_judge_holds_none_of_the_judges_files():
    def open_files():
        seen = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                seen.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:  # the listing's own descriptor, closed by now
                pass
        return seen

    child = os.fork()
    if child == 0:  # one thread here, as in a judge: the answers' zygote is a fork, as the judge's is
        code = 1
        try:
            verdicts, _ = os.pipe()  # stands for the pipe a judge writes its verdicts to
            pipe = os.readlink(f"/proc/self/fd/{verdicts}")
            with AnswerHost() as host:
                seen = loaded(host, open_files)()
                code = 0 if host._spawned is None and pipe not in seen and seen else 2
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0


def test_plain_values_travel_by_value_and_other_numbers_and_containers_as_pythons_own(host):
    def values():
        import numpy

        return {"list": [1, 2.5, "x", b"y", None, True], "tuple": (1, (2, 3)), "set": {1, 2},
                "when": datetime.datetime(2026, 12, 3, 9, 30), "money": decimal.Decimal("0.10"),
                "counter": collections.Counter("aab"), "float64": numpy.float64(1.5), "int64": numpy.int64(7),
                "point": collections.namedtuple("Point", "x y")(1, 2)}

    got = loaded(host, values)()
    assert got == {"list": [1, 2.5, "x", b"y", None, True], "tuple": (1, (2, 3)), "set": {1, 2},
                   "when": datetime.datetime(2026, 12, 3, 9, 30), "money": decimal.Decimal("0.10"),
                   "counter": {"a": 2, "b": 1}, "float64": 1.5, "int64": 7, "point": (1, 2)}
    assert type(got["counter"]) is dict and type(got["float64"]) is float and type(got["point"]) is tuple


def test_an_object_of_the_learners_stays_there_and_is_reached_through_a_proxy(host):
    def make():
        class Heartbeat:
            def __init__(self):
                self.beats = 0

            def __enter__(self):
                self.beats += 1
                return self

            def __exit__(self, *error):
                return None

        return Heartbeat()

    beat = loaded(host, make)()
    assert type(beat).__name__ == "Heartbeat" and hasattr(beat, "__enter__") and not hasattr(beat, "__len__")
    with beat:
        pass
    assert beat.beats == 1


def test_a_list_or_dict_lent_to_the_answer_comes_back_changed(host):
    def remember(done, seen):
        done["alert-1"] = "ticket-1"
        seen.append("alert-1")

    done, seen = {}, []
    loaded(host, remember)(done, seen)
    assert done == {"alert-1": "ticket-1"} and seen == ["alert-1"]


def test_the_answer_reaches_only_public_names_of_the_graders_objects_and_sets_none(host):
    class Journal:
        def __init__(self):
            self.entries = []
            self._verdict = "fail"

    def tamper(journal):
        outcome = []
        for attempt in (lambda: journal._verdict, lambda: setattr(journal, "entries", ["forged"]),
                        lambda: journal.__dict__):
            try:
                attempt()
                outcome.append("reached")
            except AttributeError as refused:
                outcome.append(str(refused))
        return outcome

    journal = Journal()
    said = loaded(host, tamper)(journal)
    assert said[0].startswith("'_verdict' is private to the grader's object")
    assert said[1].startswith("cannot set 'entries': the grader's objects are read-only to your code")
    assert said[2] == "__dict__"
    assert journal.entries == [] and journal._verdict == "fail"


def test_an_exception_of_the_learners_keeps_its_name_message_and_line(host):
    def broken(x):
        class TooLate(Exception):
            pass

        raise TooLate(f"{x} is too late")

    with pytest.raises(RemoteError, match="5 is too late") as raised:
        loaded(host, broken)(5)
    assert type(raised.value).__name__ == "TooLate"
    frames = vars(raised.value)["__fleetlab_remote_frames__"]
    assert frames[-1].name == "broken" and frames[-1].filename == __file__


def test_an_answers_exception_is_the_learners_whatever_file_its_code_claims(host):
    def divides(x):
        return x / 0

    divides.__code__ = divides.__code__.replace(co_filename=learner.__file__)

    def takes_one(a):
        return a

    with pytest.raises(ZeroDivisionError) as raised:
        loaded(host, divides)(1)
    here = [__file__]  # this file plays the harness's
    assert [frame.name for frame in learner.learner_frames(raised.value, (), here)] == ["divides"]
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given") as raised:
        loaded(host, takes_one)(1, 2)
    assert [frame.filename for frame in learner.learner_frames(raised.value, (), here)] == [learner.CALLED]


def test_system_exit_in_the_answer_never_ends_the_judge(host):
    def leaves():
        raise SystemExit(0)

    with pytest.raises(RemoteError) as raised:
        loaded(host, leaves)()
    assert type(raised.value).__name__ == "SystemExit" and not isinstance(raised.value, SystemExit)


def test_an_exception_of_the_graders_let_through_comes_back_as_the_same_object(host):
    def lets_through(step):
        try:
            step()
        except StepFailed as failed:
            raise failed

    failure = StepFailed("ToolOutputUnparseable", "the tool output is unparseable")

    def step():
        raise failure

    with pytest.raises(StepFailed) as raised:
        loaded(host, lets_through)(step)
    assert raised.value is failure


def test_an_exception_of_the_graders_let_through_carries_the_learners_frames_it_passed(host):
    def lets_through(step):
        step()  # the learner's line the grader's exception passes

    failure = ValueError("a parameter the service refuses")

    def step():
        raise failure

    with pytest.raises(ValueError) as raised:
        loaded(host, lets_through)(step)
    assert raised.value is failure
    frames = vars(raised.value)["__fleetlab_remote_frames__"]
    assert frames[0].name == "lets_through" and frames[0].filename == __file__


class _Stop(StopAnswer):
    """A harness's stop, as lab 04's harness stops a worker that keeps answering on a dead token."""


def test_a_harness_stop_unwinds_the_answer_past_except_exception_and_comes_back_as_itself(host):
    def keeps_trying(call):
        for _ in range(3):
            try:
                call()
            except Exception:  # noqa: BLE001 - a learner's catch-all: the stop is no Exception
                continue
        return "never stopped"

    stop = _Stop()

    def refuse():
        raise stop

    with pytest.raises(_Stop) as raised:
        loaded(host, keeps_trying)(refuse)
    assert raised.value is stop
    assert loaded(host, lambda: "the answers' process is still up")() == "the answers' process is still up"


def test_a_timer_the_answer_drops_is_released_in_the_judge_once_both_sides_settle(host):
    def drops(clock):
        clock.every(60, lambda: None).__enter__()  # started, never stopped, dropped at once

    clock = VirtualClock()
    try:
        with pytest.warns(ResourceWarning, match="dropped while still running"):
            loaded(host, drops)(clock)
            settle_everywhere()
    finally:
        clock.close()


def test_the_answer_reads_the_judges_virtual_time_as_a_notebook_reads_its_own(host):
    def wall_times(clock, jump):
        seen = [time.time(), datetime.datetime.now(datetime.timezone.utc).timestamp()]
        clock.sleep(jump)  # the judge's clock jumps; the answer reads the time again when the call comes back
        return [*seen, time.time()]

    clock = VirtualClock(start=1_000_000_000.0)
    try:
        before, as_datetime, after = loaded(host, wall_times)(clock, 900)
        back_here = clock.now()
    finally:
        clock.close()
    assert 1_000_000_000.0 <= before < as_datetime + 1 and as_datetime < 1_000_000_000.0 + 60  # not the real 2026
    assert 1_000_000_900.0 <= after <= back_here  # the 900 s jump, seen in the answer's process too
    moved_back = loaded(host, lambda: time.time())()  # the judge's clock closed: real time again
    assert abs(moved_back - time.time()) < 60


def test_a_value_naming_a_private_class_of_fleetlabs_is_refused(monkeypatch):
    module = types.ModuleType("fleetlab.private_probe")

    class _Hidden(enum.Enum):
        ONE = 1

    _Hidden.__module__ = module.__name__
    module._Hidden = _Hidden
    monkeypatch.setitem(sys.modules, module.__name__, module)
    judge_end, answer_end = socket.socketpair()
    peer = Peer(judge_end, trusted=False, name="judge")
    try:
        with pytest.raises(RemoteFailed, match="is not a class of fleetlab's that travels by value"):
            peer._decode(["EN", "fleetlab.private_probe:_Hidden", "ONE"])
    finally:
        peer.close()
        answer_end.close()


def test_a_pickle_naming_any_class_or_function_is_refused_unread(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.mkdir, (str(tmp_path / "made"),))

    with pytest.raises(pickle.UnpicklingError, match="posix.mkdir is not data"):
        DataOnly(io.BytesIO(pickle.dumps(["req", Evil()]))).load()
    assert not (tmp_path / "made").exists()


def test_a_case_past_its_deadline_stops_the_answers_process_and_the_next_answer_gets_a_fresh_one(fixture_lab):
    def spins(p95_seconds):
        while True:
            pass

    with AnswerHost() as host:
        looping = loaded(host, spins, "99.visibility")
        first = host.pid
        result = run_check(registry.get_check("99.visibility"), looping,
                           reload=lambda: loaded(host, spins, "99.visibility"))  # a busy machine's rerun
        said = result.cases[0].diagnosis
        assert "timed out" in said or said.startswith(TOO_BUSY), said  # never "your code stopped the process"
        assert loaded(host, lambda p95: 60, "99.visibility")(1) == 60 and host.pid != first
        with pytest.raises(RemoteFailed):
            looping(1)


def test_an_answer_process_that_was_killed_fails_the_calls_waiting_on_it(host):
    def dies():
        os.kill(os.getpid(), 9)

    with pytest.raises(RemoteFailed, match="it exited or was killed"):
        loaded(host, dies)()


def test_the_judge_keeps_its_memory_from_other_processes_of_its_user():
    pid = os.fork()
    if pid == 0:  # in a child: the test process itself stays as it was
        made = keep_memory_private()
        os._exit(0 if made and ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 0 else 1)  # PR_GET_DUMPABLE
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def test_a_client_arrives_as_a_real_client_and_a_modelled_error_let_through_is_the_graders_own(host):
    import boto3
    from moto import mock_aws

    def looks_up(sqs):
        try:
            return sqs.get_queue_url(QueueName="fl-missing")["QueueUrl"]
        except sqs.exceptions.QueueDoesNotExist:  # boto3's modelled exception, raised by the answer's client
            raise
        except Exception as other:
            return f"not caught as QueueDoesNotExist: {type(other).__name__}"

    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        with pytest.raises(sqs.exceptions.QueueDoesNotExist):  # the harness's client's class: its own error
            loaded(host, looks_up)(sqs)


def test_a_sealed_answer_sees_only_its_own_processes_and_no_instructors_package_and_keeps_the_judges_time():
    from fleetlab.course.judge import sandbox

    if sandbox.probe():
        pytest.skip(f"no sandbox here: {sandbox.probe()}")
    import importlib.util

    instructor_source = importlib.util.find_spec("fleetlab_instructor").submodule_search_locations[0]  # not imported

    def looks_around(clock, instructor_source):
        import importlib.util
        import pathlib

        seen = time.time()
        clock.sleep(900)
        processes = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
        writable = []
        for folder in ("/", "/usr", os.path.dirname(os.__file__), "/tmp"):
            try:
                pathlib.Path(folder, "probe").write_text("x")
                writable.append(folder)
            except OSError:
                pass
        return {"pid": os.getpid(), "processes": processes, "uid": os.getuid(), "seen": seen, "after": time.time(),
                "instructor": importlib.util.find_spec("fleetlab_instructor") is not None,
                "source": os.path.exists(instructor_source), "writable": writable, "cwd": os.getcwd()}

    clock = VirtualClock(start=1_000_000_000.0)
    try:
        with AnswerHost(sealed=True) as host:
            said = loaded(host, looks_around)(clock, instructor_source)
    finally:
        clock.close()
    assert said["pid"] == 2 and said["processes"] == [1, 2]  # its namespace's init, and itself
    assert (said["instructor"], said["source"]) == (False, False)
    assert said["writable"] == ["/tmp"] and said["cwd"] == "/tmp"
    assert said["uid"] != 0
    assert 1_000_000_000.0 <= said["seen"] < 1_000_000_060.0 and said["after"] >= 1_000_000_900.0
