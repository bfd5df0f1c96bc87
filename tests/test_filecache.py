"""``ptbsite.filecache.AtomicAddFileBasedCache``: the page cache's compute lock taken by one process only.

Django's own ``FileBasedCache.add`` checks, then writes: processes that race on one key can all win (the same page
computed once per worker). Here each key is raced by 6 processes released together by a barrier; exactly one wins.
"""
from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from ptbsite.filecache import AtomicAddFileBasedCache

PROCESSES = 6
KEYS = 40


def _race(location: str, barrier, results) -> None:
    cache = AtomicAddFileBasedCache(location, {})
    won = []
    for n in range(KEYS):
        barrier.wait()
        if cache.add(f"page-{n}:computing", 1, timeout=30):
            won.append(n)
    results.put(won)


def test_one_process_of_many_takes_each_lock(tmp_path: Path):
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(PROCESSES), context.Queue()
    workers = [context.Process(target=_race, args=(str(tmp_path), barrier, results)) for _ in range(PROCESSES)]
    for worker in workers:
        worker.start()
    won = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    winners = sorted(n for each in won for n in each)
    assert winners == list(range(KEYS))  # every key taken, each by exactly one process
    assert not [p for p in tmp_path.iterdir() if not p.name.endswith(".djcache")]  # no temporary file left


def test_an_expired_entry_is_replaced_and_a_live_one_kept(tmp_path: Path):
    cache = AtomicAddFileBasedCache(str(tmp_path), {})
    assert cache.add("lock", "first", timeout=1) is True
    assert cache.add("lock", "second", timeout=30) is False
    assert cache.get("lock") == "first"
    time.sleep(1.2)
    assert cache.add("lock", "third", timeout=30) is True
    assert cache.get("lock") == "third"
    assert cache.add("lock", "fourth") is False
