"""``system_monitor.log`` (spec 1.3): GPU utilisation and memory samples, one per block (every 60 s).

A block starts ``--- YYYY-MM-DD HH:MM:SS UTC ---``; its ``[GPU]`` section holds one nvidia-smi CSV row per GPU:
index, utilisation %, memory utilisation %, memory used MiB, memory total MiB, temperature, power W. A sample
sums memory over the GPUs and averages their utilisation. Lines that do not fit are skipped (the monitor is
killed mid-write at the time limit).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

_BLOCK = re.compile(r"^--- (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC ---$")
_GPU_ROW = re.compile(r"^\s*\d+\s*,\s*(\d+(?:\.\d+)?)\s*%?\s*,\s*[\d.]+\s*%?\s*,\s*(\d+(?:\.\d+)?)\s*MiB\s*,"
                      r"\s*(\d+(?:\.\d+)?)\s*MiB")


@dataclass(frozen=True, slots=True)
class Sample:
    """One monitor sample: UTC time (aware), mean GPU utilisation (%), memory used and total (MiB, summed)."""

    time: datetime
    gpu_util: float
    gpu_mem_mib: float
    gpu_mem_total_mib: float


def parse_monitor(text: str) -> list[Sample]:
    """The samples of a system_monitor.log, in file order; blocks without a GPU row are skipped."""
    samples: list[Sample] = []
    when: datetime | None = None
    section = ""
    rows: list[tuple[float, float, float]] = []

    def close() -> None:
        if when is not None and rows:
            samples.append(Sample(when, sum(r[0] for r in rows) / len(rows), sum(r[1] for r in rows),
                                  sum(r[2] for r in rows)))

    for line in text.splitlines():
        # Only a line holding "--- " can be a block's start; its time is ISO 8601 as _BLOCK matched it, read by
        # fromisoformat (which refuses what strptime refused: an hour 24, a February 30), ~10x cheaper.
        block = _BLOCK.match(line.strip()) if "--- " in line else None
        if block:
            close()
            when = datetime.fromisoformat(block[1]).replace(tzinfo=timezone.utc)
            section, rows = "", []
        elif line.startswith("["):
            section = line.strip()
        elif section == "[GPU]":
            row = _GPU_ROW.match(line)
            if row:
                rows.append((float(row[1]), float(row[2]), float(row[3])))
    close()
    return samples
