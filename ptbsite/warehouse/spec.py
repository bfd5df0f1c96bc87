"""The warehouse setting (``settings.PTB_WAREHOUSE``, env ``PTB_WAREHOUSE``) names one of three kinds:

- a plain DuckDB file, e.g. ``data/warehouse.duckdb`` (any value not starting with ``ducklake:``). One process
  at a time may hold it (a second one gets ``IOException: Could not set lock on file``): tests, notebooks,
  the static export, ``runserver``. Every unit of work opens the file and closes it again, so two low-rate
  processes take turns.
- ``ducklake:sqlite:<catalog path>?data=<folder>``: DuckLake with its catalog in a SQLite file and the data as
  Parquet files in a local folder, e.g. ``ducklake:sqlite:data/ducklake/catalog.sqlite?data=data/ducklake/data``.
  Several processes may read and write at once; no service needed (the embedded default).
- ``ducklake:postgres:<libpq conninfo or URL>?data=<folder>``: DuckLake with its catalog in PostgreSQL, e.g.
  ``ducklake:postgres:dbname=ptb host=127.0.0.1 user=postgres?data=/srv/ptb/lake`` (production).

The text after the last ``?data=`` is the data folder (relative paths are taken from the working directory), or
an S3 URL, ``s3://<bucket>/<prefix>``: the Parquet files then live in S3-compatible object storage, read and
written through DuckDB's httpfs extension with the credentials and endpoint of the ``PTB_S3_*`` settings
(``ptbsite.warehouse.connections``). Several machines can then share one warehouse: a PostgreSQL catalog, one
bucket (README, "Deployment").
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings


@dataclass(frozen=True)
class WarehouseSpec:
    """A parsed ``PTB_WAREHOUSE``: ``kind`` is ``file``, ``ducklake-sqlite`` or ``ducklake-postgres``;
    ``catalog`` the DuckDB file, the SQLite catalog file or the PostgreSQL conninfo; ``data`` the DuckLake data
    folder (None for a plain file)."""

    kind: str
    catalog: str
    data: str | None = None

    @property
    def is_ducklake(self) -> bool:
        return self.kind != "file"

    @property
    def data_in_object_storage(self) -> bool:
        """Whether the DuckLake data folder is an ``s3://`` URL (object storage) rather than a local folder."""
        return self.data is not None and is_object_url(self.data)


def is_object_url(path: str) -> bool:
    """Whether ``path`` names object storage (``s3://bucket/prefix``), which DuckDB's httpfs reads and writes."""
    return path.startswith("s3://")


def parse_spec(text: str) -> WarehouseSpec:
    """Parse a warehouse setting (syntax in the module docstring). Memoised per text and working directory
    (relative paths are resolved against it): every cached page's hit reads the version file the spec locates.

    Raises:
        ValueError: a ``ducklake:`` value with another catalog than sqlite/postgres, or without ``?data=``.
    """
    return _parse_spec(text, os.getcwd())


@functools.lru_cache(maxsize=64)
def _parse_spec(text: str, cwd: str) -> WarehouseSpec:
    if not text.startswith("ducklake:"):
        return WarehouseSpec("file", text)
    rest = text[len("ducklake:"):]
    catalog_kind, _, rest = rest.partition(":")
    if catalog_kind not in ("sqlite", "postgres"):
        raise ValueError(f"PTB_WAREHOUSE {text!r}: use ducklake:sqlite:<file>?data=<folder> or "
                         "ducklake:postgres:<conninfo>?data=<folder>")
    catalog, marker, data = rest.rpartition("?data=")
    if not marker or not catalog or not data:
        raise ValueError(f"PTB_WAREHOUSE {text!r}: a DuckLake warehouse needs its data folder, ...?data=<folder>")
    if catalog_kind == "sqlite":
        catalog = str(Path(catalog).resolve())
    if is_object_url(data):
        bucket = data[len("s3://"):].split("/", 1)[0]
        if not bucket:
            raise ValueError(f"PTB_WAREHOUSE {text!r}: an object-storage data folder is s3://<bucket>/<prefix>")
        return WarehouseSpec(f"ducklake-{catalog_kind}", catalog, data.rstrip("/"))
    return WarehouseSpec(f"ducklake-{catalog_kind}", catalog, str(Path(data).resolve()))


def warehouse_spec() -> str:
    """The configured warehouse setting, as text (settings.PTB_WAREHOUSE, env ``PTB_WAREHOUSE``)."""
    return str(settings.PTB_WAREHOUSE)


def describe(text: str | None = None) -> str:
    """The warehouse for messages: kind and location, without a PostgreSQL password."""
    spec = parse_spec(text or warehouse_spec())
    catalog = re.sub(r"(password=)\S+|(://[^:/@]+:)[^@]+@", lambda m: (m[1] or m[2]) + "***" + ("" if m[1] else "@"),
                     spec.catalog)
    return f"{spec.kind} {catalog}" + (f" (data {spec.data})" if spec.data else "")
