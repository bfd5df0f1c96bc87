"""The test runs' own Redis databases (tests/conftest.py RedisDatabases) and their Celery workers: a database some
client still has selected (a worker that outlived a killed test run) is never claimed or taken over, and a worker
started by CeleryWorker dies with the process that started it (issue 25: such a worker took the next run's
tasks)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import redis

from tests.conftest import _DIE_WITH_TEST_RUN, RedisDatabases


def _dead_pid() -> int:
    """The id of a process of this machine that has exited."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_database_a_client_has_selected_is_neither_claimed_nor_taken_over() -> None:
    """Only claims this test made are changed (other test runs on the machine claim databases too)."""
    first, second = RedisDatabases(), RedisDatabases()
    db = first.claim()
    key, gone = f"ptb-test-claim:{db}", f"{os.uname().nodename}:{_dead_pid()}:ended"
    leftover = redis.Redis.from_url(f"{first.base}/{db}")  # stands in for a worker that outlived its test run
    try:
        leftover.ping()
        assert second._selected(db) == 1
        first._control.set(key, gone, xx=True)  # the run that claimed it was killed: its claim names a dead process
        assert not second._reclaim_from_dead_owner(db)
        _delete_if(second, key, gone)  # the claim expired, or was released while the worker kept running
        assert second.claim() != db
    finally:
        leftover.close()
        _delete_if(second, key, gone)
        second.release()


def _delete_if(databases: RedisDatabases, key: str, value: str) -> None:
    """Delete ``key`` only while it holds ``value`` (a claim another run made meanwhile is left alone)."""
    databases._control.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end "
                            "return 0", 1, key, value)


def test_a_worker_process_dies_with_the_test_run_that_started_it() -> None:
    """A stand-in test run (a Python process) starts a long sleep the way CeleryWorker starts a worker (own session,
    through _DIE_WITH_TEST_RUN) and is SIGKILLed: the sleep is killed too."""
    sleep = "import time; time.sleep(600)"
    starter = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', sys.argv[1], str(os.getpid()), '-c', sys.argv[2]],"
        " start_new_session=True)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    run = subprocess.Popen([sys.executable, "-c", starter, _DIE_WITH_TEST_RUN, sleep], stdout=subprocess.PIPE,
                           text=True)
    assert run.stdout is not None
    worker = int(run.stdout.readline())
    try:
        deadline = time.monotonic() + 60
        while _arguments(worker)[1:] != ["-c", sleep]:  # until the death signal is set and the sleep exec'd
            assert time.monotonic() < deadline and run.poll() is None, _arguments(worker)
            time.sleep(0.1)
        run.kill()
        run.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _running(worker):
            time.sleep(0.1)
        assert not _running(worker)
    finally:
        if _running(worker):
            os.kill(worker, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for init to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _arguments(pid: int) -> list[str]:
    """The command line of process ``pid`` ([] once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().decode(errors="replace").split("\0")[:-1]
    except FileNotFoundError:
        return []
