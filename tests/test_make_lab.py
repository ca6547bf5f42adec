"""`make lab` serves JupyterLab on labs/ (started headless, then stopped by its PID)."""

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_serves_jupyterlab(tmp_path):
    port, token = free_port(), secrets.token_hex(8)
    env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    server = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_PORT={port}", "LAB_FLAGS=--no-browser"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        status = 0
        while time.monotonic() < deadline and server.poll() is None:
            status = get(f"http://127.0.0.1:{port}/lab?token={token}")
            if status == 200:
                break
            time.sleep(0.25)
        assert status == 200, f"JupyterLab did not answer on /lab (last status {status})"
        assert get(f"http://127.0.0.1:{port}/api/contents/00_orientation.ipynb?token={token}") == 200
        listed = {item["name"] for item in get_json(f"http://127.0.0.1:{port}/api/contents/?token={token}")["content"]}
        assert "00_orientation.ipynb" in listed and "solutions" not in listed, "the answers show in the file browser"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
