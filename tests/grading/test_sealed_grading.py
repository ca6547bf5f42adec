"""A hostile room, graded by the real ``fleetlab grade``, as root and as an ordinary user (issue 39).

One batch per way of running the grader: a victim notebook with a right
answer to ``01.visibility`` (2 points) beside attackers whose own answer is
wrong (0 points) and whose cells or answers attack the grader, the
instructor's side, the hidden cases or the victim. Every attack that paid
before the sandbox is here by kind; each attacker must score exactly what
its own answer earns (0), the victim its full score, the gradebook must be
the grader's, no feedback may hold anything of the instructor's side, and
no process an attacker started may outlive the batch.

``make test-sealed`` runs it (CI does, as root). The ordinary user is ``nobody``: the test (run as root, as CI runs) gives it
a mount namespace in which the interpreter under ``/root`` is reachable, and
a folder of its own for the batch.
"""

from __future__ import annotations

import csv
import os
import pwd
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import nbformat
import psutil
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

import fleetlab_instructor
from fleetlab_instructor.checks.lab01.visibility import HIDDEN
from fleetlab_instructor.report.gradebook import LEARNER_COLUMN, MAXIMA_ROW
from fleetlab.course.judge import sandbox

pytestmark = pytest.mark.sealed
REPO = Path(__file__).resolve().parents[2]
FLEETLAB = Path(sys.executable).with_name("fleetlab")
LAB = "01_at_least_once"
MARKER = f"fleetlab-attack-{uuid.uuid4().hex[:8]}"
"""On the command line of every process an attacker starts, to find any that outlived the batch."""
RIGHT = """import math

def choose_visibility(step_times):
    ordered = sorted(step_times)
    return math.ceil(1.5 * ordered[math.ceil(0.95 * len(ordered)) - 1])"""
WRONG = "def choose_visibility(step_times):\n    return 30"
CHECK = 'check("01.visibility", choose_visibility)'
LINGER = f"""import subprocess, sys
for _ in range(3):
    subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(300)", "{MARKER}"],
                     start_new_session=True)"""
"""Processes in sessions of their own, meant to outlive the kernel."""
READ_REFERENCE = """import importlib, sys
sys.meta_path[:] = [finder for finder in sys.meta_path if "Instructor" not in type(finder).__name__]
try:
    choose_visibility = importlib.import_module("fleetlab_instructor.checks").side_of("01.visibility").reference
except ImportError:
    pass"""
WALK_FOR_SECRETS = """import os, pathlib
found = []
for top in ["/", os.path.expanduser("~"), os.getcwd(), "/tmp", "/work", "/root"]:
    for where, folders, names in os.walk(top):
        if where.startswith(("/proc", "/sys", "/dev", "/usr")):
            folders[:] = []
            continue
        for name in names:
            if name in ("request.json", "visibility.py") or name.endswith(".csv") or "answers" in name:
                path = pathlib.Path(where, name)
                try:
                    found.append(f"{path}: {path.read_text(errors='replace')[:20000]}")
                except OSError:
                    pass
secrets = "\\n".join(found)"""
"""Every file of interest the process can read: the hidden cases' request, the instructor's checks, gradebooks,
other learners' hand-ins."""
PROBE = """def reached():
    import os, socket
    found = []
    named = [line.split()[-1] for line in open("/proc/net/unix").read().splitlines()[1:] if len(line.split()) > 7]
    for address in [name for name in named if name.startswith("@")] + [os.environ.get("FLEETLAB_WARM_KERNELS", "/none")]:
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(address.replace("@", "\\0", 1) if address.startswith("@") else address)
            found.append(f"unix socket {address}")
        except OSError:
            pass
    for port in (22, 80, 443, 2375, 5000, 6443, 8888):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            found.append(f"tcp {port}")
        except OSError:
            pass
    for pid in [name for name in os.listdir("/proc") if name.isdigit()]:
        try:
            command = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if any(word in command for word in (b"fleetlab\\0grade", b"pytest", b"kernel_launcher")):
            found.append(f"process {pid}: {command[:60]!r}")
    for path in ("/sys/kernel", "/dev/vda", "/dev/mem", "/root/.bash_history", INSTRUCTORS):
        if os.path.exists(path):
            found.append(path)
    for variable in os.environ:
        if variable.startswith(("AWS_ACCESS", "AWS_SECRET", "AWS_SESSION", "GITHUB", "KUBE")):
            found.append(variable)
    return found"""
"""What a process can reach beyond its sandbox: unix sockets (abstract ones, the warm template's), a port on the
host's loopback, the grader's or a launcher's process, the host's /sys, devices and files, the instructor's
package's folder, credentials."""
PROBER = f"INSTRUCTORS = {str(Path(fleetlab_instructor.__file__).parent)!r}\n" + PROBE + """
REACHED_IN_THE_KERNEL = reached()

def choose_visibility(step_times):
    raise RuntimeError(f"reached in the kernel: {REACHED_IN_THE_KERNEL}; in the answer: {reached()}")"""
SHORTCUT_LAB = "03_poison_and_dlq"
OWN_BATCH = """def batch_response(event, process, fifo):
    failed = []
    for record in event["Records"]:
        if fifo and failed:
            failed.append(record["messageId"])
            continue
        try:
            process(record)
        except Exception:
            failed.append(record["messageId"])
    return {"batchItemFailures": [{"itemIdentifier": message} for message in failed]}"""
LIBRARY_CALL = """
    from fleetlab.services.sqs.esm import partial_batch_response
    return partial_batch_response(event, process, fifo=fifo)"""
SHORTCUTS = {
    "unprofiler": "def batch_response(event, process, fifo):\n    import sys, threading\n    sys.setprofile(None)"
                  "\n    threading.setprofile(None)" + LIBRARY_CALL,
    "unwatcher": "def batch_response(event, process, fifo):\n    import sys\n"
                 "    sys.modules['fleetlab.course.grading.shortcuts']._process_watch.reset({})" + LIBRARY_CALL,
    "reloader": "def batch_response(event, process, fifo):\n    import importlib, fleetlab.services.sqs.esm as esm\n"
                "    importlib.reload(esm)" + LIBRARY_CALL,
}
"""Answers to 03.batch that call the library's own answer after turning the grader's watch off, emptying it or
rerunning the library's module: each scores nothing, beside the victim's own code (3 points). They attack the
watch, not the sandbox: graded in the root batch only."""
ATTACKS = {
    "reference": (WRONG, READ_REFERENCE),
    "walker": (WRONG, WALK_FOR_SECRETS + "\nprint(secrets)\n" + """
import shutil
for line in secrets.splitlines():
    if "fleetlab-answers.json" in line:
        shutil.copy(line.split(":", 1)[0], "fleetlab-answers.json")"""),
    "answerimporter": ("def choose_visibility(step_times):\n" + textwrap.indent(READ_REFERENCE, "    ")
                       + "\n    return choose_visibility(step_times)", ""),
    "answerwalker": ("def choose_visibility(step_times):\n" + textwrap.indent(WALK_FOR_SECRETS, "    ")
                     + "\n    raise RuntimeError(secrets or 'nothing found')", ""),
    "forger": (WRONG, """import os, signal, pathlib
for pid in [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (os.getpid(), os.getppid())]:
    try:
        command = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        continue
    if b"judge" in command or b"fleetlab" in command or b"warm_kernels" in command:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            pathlib.Path(cwd, "json.py").write_text("raise SystemExit(0)")
        except OSError:
            pass
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:  # another kernel's memory, the template's, the judge's
        with open(f"/proc/{pid}/mem", "rb") as memory:
            memory.read(1)
    except OSError:
        pass"""),
    "lingerer": (WRONG, LINGER + """
import pathlib
for name in ("../grades.csv", "../../grades.csv", "../shard-0-of-1.csv", "../../shard-1-of-2.csv"):
    try:
        pathlib.Path(name).write_text("learner,total\\nlingerer,99\\n")
    except OSError:
        pass"""),
    "spoiler": (WRONG, """import os, pathlib
for variable in ("IPYTHONDIR", "MPLCONFIGDIR", "FLEETLAB_FIDELITY_CACHE"):
    folder = os.environ.get(variable)
    if folder:
        for target in (pathlib.Path(folder, "profile_default", "startup"), pathlib.Path(folder).parent / "ipython"
                       / "profile_default" / "startup"):
            try:
                target.mkdir(parents=True, exist_ok=True)
                (target / "00-spoil.py").write_text("raise SystemExit('spoiled')")
            except OSError:
                pass
try:
    os.kill(-1, 9)
except OSError:
    pass"""),
    "prober": (PROBER, ""),
    "relinker": (WRONG, """import os

def relink(result):  # after the hand-in cell: the grader would read /dev/zero for ever
    if os.path.isfile("fleetlab-answers.json") and not os.path.islink("fleetlab-answers.json"):
        os.remove("fleetlab-answers.json")
        os.symlink("/dev/zero", "fleetlab-answers.json")

get_ipython().events.register("post_run_cell", relink)"""),
    "hoarder": (WRONG, LINGER + """
import os
held = []
try:
    for _ in range(64):
        held.append(bytearray(64 * 2**20))
except MemoryError:
    pass
children = 0
try:
    for _ in range(400):
        if os.fork() == 0:
            import time
            time.sleep(300)
            os._exit(0)
        children += 1
except OSError:
    pass
print("forked", children)"""),
}



def notebook(answer: str, attack: str, check: str = CHECK) -> nbformat.NotebookNode:
    cells = ["from fleetlab import check", answer, *([attack] if attack else []), check]
    return new_notebook(cells=[new_markdown_cell("# Lab 01")] + [new_code_cell(source) for source in cells])


def as_nobody(command: list[str]) -> list[str]:
    """``command`` run as ``nobody``, in a mount namespace where the interpreter under ``/root`` is reachable."""
    script = textwrap.dedent("""\
        set -e
        stage=$(mktemp -d)
        mount --bind /root "$stage"
        mount -t tmpfs -o mode=755 tmpfs /root
        for entry in "$stage"/.* "$stage"/*; do
            name=$(basename "$entry")
            case "$name" in .|..|'*'|'.*') continue;; esac
            if [ -d "$entry" ]; then mkdir -p "/root/$name"; else touch "/root/$name"; fi
            mount --rbind "$entry" "/root/$name"
        done
        umount "$stage"
        exec setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
        """)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *command]


@pytest.fixture(scope="module", params=["root", "ordinary user"])
def batch(request, tmp_path_factory):
    """The batch graded by ``fleetlab grade``: (gradebook rows by learner, feedback texts, the out folder)."""
    _needs_root_and_a_sandbox()
    work = Path(tmp_path_factory.mktemp("sealed"))
    if request.param == "ordinary user":
        work = Path(f"/tmp/fleetlab-sealed-{uuid.uuid4().hex[:8]}")
        work.mkdir(mode=0o755)
        nobody = pwd.getpwnam("nobody")
        os.chown(work, nobody.pw_uid, nobody.pw_gid)
        request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    submissions, out = work / "submissions", work / "out"
    for folder in (submissions, out):
        folder.mkdir()
    nbformat.write(notebook(RIGHT, ""), submissions / f"victim_{LAB}.ipynb")
    for learner, (answer, attack) in ATTACKS.items():
        nbformat.write(notebook(answer, attack), submissions / f"{learner}_{LAB}.ipynb")
    for learner, answer in ({"victim": OWN_BATCH, **SHORTCUTS} if request.param == "root" else {}).items():
        nbformat.write(notebook(answer, "", 'check("03.batch", batch_response)'),
                       submissions / f"{learner}_{SHORTCUT_LAB}.ipynb")
    command = [str(FLEETLAB), "grade", str(submissions), "--out", str(out / "grades.csv"), "--cell-timeout", "60"]
    env = {**os.environ, "HOME": str(work), "FLEETLAB_HOME": str(work / ".fleetlab")}
    env.pop("FLEETLAB_FIDELITY_CACHE", None)
    if request.param == "ordinary user":
        for path in (submissions, out, *submissions.iterdir()):
            os.chown(path, pwd.getpwnam("nobody").pw_uid, -1)
        command = as_nobody(command)
    done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    with open(out / "grades.csv", newline="", encoding="utf-8") as book:
        rows = {row[LEARNER_COLUMN]: row for row in csv.DictReader(book) if row[LEARNER_COLUMN] != MAXIMA_ROW}
    feedback = {path.stem: path.read_text(encoding="utf-8") for path in (out / "feedback").glob("*.md")}
    left = [process.pid for process in psutil.process_iter(["cmdline"]) if MARKER in " ".join(process.info["cmdline"] or ())]
    return rows, feedback, out, left


def test_the_victim_scores_its_full_points_whatever_the_room_does(batch):
    rows, *_ = batch
    assert float(rows["victim"]["01.visibility"]) == 2
    if "03.batch" in rows["victim"]:
        assert float(rows["victim"]["03.batch"]) == 3


@pytest.mark.parametrize("learner", sorted(SHORTCUTS))
def test_an_answer_that_dodges_the_shortcut_watch_scores_nothing(batch, learner):
    rows, feedback, *_ = batch
    if learner not in rows:
        pytest.skip("graded in the root batch only")
    assert float(rows[learner]["03.batch"]) == 0
    assert "this exercise asks for your own code" in feedback[learner]


def test_a_prober_reaches_nothing_beyond_its_sandbox_from_its_kernel_or_its_answer(batch):
    _, feedback, *_ = batch
    assert "reached in the kernel: []; in the answer: []" in feedback["prober"], feedback["prober"][:3000]


@pytest.mark.parametrize("learner", sorted(ATTACKS))
def test_an_attacker_scores_exactly_what_its_own_answer_earns(batch, learner):
    rows, *_ = batch
    assert float(rows[learner]["01.visibility"]) == 0


def test_no_feedback_holds_the_instructors_side_or_a_hidden_case(batch):
    _, feedback, *_ = batch
    assert set(feedback) >= {"victim", *ATTACKS}
    for learner, said in feedback.items():
        for secret in ("InstructorSide", "reference_visibility", "WRONG_ANSWERS", *(case.name for case in HIDDEN)):
            assert secret not in said, (learner, secret)


def test_the_gradebook_is_the_graders_alone(batch):
    rows, _, out, _ = batch
    assert sorted(path.name for path in out.iterdir()) == ["feedback", "grades.csv", "grades.csv.journal"]
    assert set(rows) - set(SHORTCUTS) == {"victim", *ATTACKS}


def test_nothing_an_attacker_started_outlives_the_batch(batch):
    *_, left = batch
    assert left == []


def test_a_grader_killed_part_way_leaves_nothing_running(tmp_path):
    """The template and the judge server die with the grader, each kernel's launcher too, and a kernel's end
    ends its sandbox and all it started."""
    _needs_root_and_a_sandbox()
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    spin = f'import subprocess, sys\nsubprocess.Popen([sys.executable, "-c", "while True: pass", "{MARKER}-spin"])'
    nbformat.write(notebook(WRONG, spin + "\nwhile True:\n    pass"), submissions / f"spinner_{LAB}.ipynb")
    grader = psutil.Popen([str(FLEETLAB), "grade", str(submissions), "--out", str(tmp_path / "grades.csv")],
                          cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        spinning = _wait_for(lambda: [p for p in psutil.process_iter(["cmdline"])
                                      if f"{MARKER}-spin" in " ".join(p.info["cmdline"] or ())], 300)
        assert spinning, "the spinner's cell never ran"
        family = [(child.pid, child.create_time()) for child in grader.children(recursive=True)]
        assert len(family) >= 4  # the template, the judge server, the kernel's launcher, its sandbox
    finally:
        grader.kill()
        grader.wait()
    assert _wait_for(lambda: not [pid for pid, born in family if _alive(pid, born)], 60), \
        [psutil.Process(pid).cmdline() for pid, born in family if _alive(pid, born)]


def _needs_root_and_a_sandbox() -> None:
    """Skip where the room cannot be graded both ways (not root, no sandbox); in CI, which runs as root, fail."""
    why = "run as root: the room is graded as root and as `nobody`" if os.geteuid() != 0 else sandbox.probe()
    if why:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(why)


def _alive(pid: int, born: float) -> bool:
    try:
        process = psutil.Process(pid)
        return process.create_time() == born and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for(condition, seconds: float):
    """``condition()``'s first true value, polled every 0.1 s for at most ``seconds`` (the last value if none)."""
    deadline = time.monotonic() + seconds
    while not (value := condition()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return value
