"""A warehouse beyond one machine: DuckLake with its catalog in PostgreSQL and its Parquet files in S3-compatible
object storage, served by two server processes with separate local folders that share the catalog, the bucket and a
Redis page cache.

Stand-in: moto's server mode (``moto_server``, on loopback, a port of this test's own) replaces the S3-compatible
object store (AWS S3, MinIO, Ceph, R2): it answers the same S3 REST protocol DuckDB's httpfs speaks. Everything
else is real: the PostgreSQL catalog (a database of this test's own), Redis (a database this test run owns), two
``manage.py serve`` processes (gunicorn) and ``manage.py ingest``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ptbsite import warehouse
from tests.conftest import redis_url
from tests.test_serve_concurrency import ROOT, _agent_tree, _free_port, _get, _manage

BUCKET = "ptb-lake"
KEY_ID, SECRET = "test-key-id", "test-secret-key"  # moto accepts any credentials


@pytest.fixture
def object_store(tmp_path: Path):
    """A moto S3 server on a free loopback port with an empty bucket; yields its ``host:port``."""
    boto3 = pytest.importorskip("boto3")
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    endpoint = f"127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=f"http://{endpoint}", aws_access_key_id=KEY_ID,
                          aws_secret_access_key=SECRET, region_name="us-east-1")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                client.create_bucket(Bucket=BUCKET)
                break
            except Exception:
                assert server.poll() is None, "moto_server exited"
                assert time.monotonic() < deadline, "moto_server did not start"
                time.sleep(0.2)
        yield endpoint, client
    finally:
        server.terminate()
        server.wait(timeout=10)


def _serve(env: dict, port: int) -> subprocess.Popen:
    server = subprocess.Popen([sys.executable, "manage.py", "serve", "--workers", "1", "--threads", "4",
                               "--bind", f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 90
    while True:
        assert server.poll() is None, server.stdout.read() if server.stdout else ""
        try:
            if _get(f"http://127.0.0.1:{port}", "/api/runs?limit=1")[0] == 200:
                return server
        except OSError:
            pass
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.3)


def _run_ids(base: str) -> set[str]:
    status, body = _get(base, "/api/runs?limit=200")
    assert status == 200, body[:300]
    return {run["id"] for run in json.loads(body)["runs"]}


@pytest.mark.slow
def test_two_hosts_share_a_postgres_catalog_a_bucket_and_a_redis_cache(tmp_path, object_store, warehouse_factory,
                                                                       settings):
    endpoint, s3 = object_store
    catalog = warehouse_factory.make("ducklake-postgres").rpartition("?data=")[0]
    spec = f"{catalog}?data=s3://{BUCKET}/lake"
    cache = redis_url(0, flush=True)
    hosts = []
    for name in ("host-a", "host-b"):
        folder = tmp_path / name
        folder.mkdir()
        env = {**os.environ, "PTB_DATA_DIR": str(folder), "PTB_WAREHOUSE": spec, "PTB_CACHE_URL": cache,
               "PTB_S3_ENDPOINT": endpoint, "PTB_S3_URL_STYLE": "path", "PTB_S3_USE_SSL": "0",
               "AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "PTB_PAGE_WARM": "0",
               "DJANGO_SETTINGS_MODULE": "ptbsite.settings", "DJANGO_STATIC_ROOT": str(folder / "static"),
               "PYTHONUNBUFFERED": "1"}
        env.pop("DATABASE_URL", None)
        hosts.append(env)
    tree, tree_ids = _agent_tree(tmp_path / "tree", seed=3)
    for args in (("migrate", "--noinput", "-v0"), ("import_published",)):
        done = _manage(hosts[0], *args)
        assert done.returncode == 0, done.stderr
    assert _manage(hosts[1], "migrate", "--noinput", "-v0").returncode == 0

    ports = [_free_port(), _free_port()]
    servers = [_serve(env, port) for env, port in zip(hosts, ports)]
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        assert _run_ids(bases[0]) == _run_ids(bases[1]) == set()
        # both hosts have now cached the empty runs list; an ingest on host A must reach host B's next request
        assert _get(bases[1], "/runs/")[0] == 200
        done = _manage(hosts[0], "ingest", str(tree.root), "--quiet")
        assert done.returncode == 0, done.stderr
        assert _run_ids(bases[1]) == _run_ids(bases[0]) == tree_ids
        some_run = sorted(tree_ids)[0]
        pages = [_get(base, f"/api/runs/{some_run}") for base in bases]
        assert pages[0][0] == pages[1][0] == 200
        assert json.loads(pages[0][1]) == json.loads(pages[1][1])
        leaderboards = [_get(base, "/api/leaderboard?source=all") for base in bases]
        assert leaderboards[0] == leaderboards[1] and leaderboards[0][0] == 200
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)

    # The Parquet files are in the bucket, none on either host's disk.
    keys = _parquet_keys(s3)
    assert len(keys) >= 5 and any("/steps/" in key for key in keys), keys
    for env in hosts:
        assert not list(Path(env["PTB_DATA_DIR"]).rglob("*.parquet"))

    # compact_warehouse works against the bucket too (it lists, merges and deletes objects) and keeps every row.
    compacted = _manage(hosts[0], "compact_warehouse", "--keep", "0")
    assert compacted.returncode == 0, compacted.stderr
    assert "The site now reads" in compacted.stdout and len(_parquet_keys(s3)) >= 5
    assert _run_ids_in_process(spec, settings, endpoint) == tree_ids


def _parquet_keys(s3) -> list[str]:
    return [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="lake/")
            for o in page.get("Contents", []) if o["Key"].endswith(".parquet")]


def _run_ids_in_process(spec: str, settings, endpoint: str) -> set[str]:
    """The run ids this process reads from the warehouse ``spec`` (after compaction: every row still there)."""
    settings.PTB_WAREHOUSE, settings.PTB_S3_ENDPOINT = spec, endpoint
    settings.PTB_S3_URL_STYLE, settings.PTB_S3_USE_SSL = "path", False
    settings.AWS_ACCESS_KEY_ID, settings.AWS_SECRET_ACCESS_KEY = KEY_ID, SECRET
    warehouse.reset_migration_cache()
    try:
        with warehouse.connect() as con:
            return {row[0] for row in con.execute("SELECT id FROM runs").fetchall()}
    finally:
        warehouse.close_connections()


def test_an_object_storage_data_folder_is_kept_as_a_url():
    spec = warehouse.parse_spec("ducklake:postgres:dbname=ptb host=db?data=s3://lake-bucket/ptb/")
    assert (spec.kind, spec.catalog, spec.data) == ("ducklake-postgres", "dbname=ptb host=db", "s3://lake-bucket/ptb")
    assert spec.data_in_object_storage
    assert not warehouse.parse_spec("ducklake:postgres:dbname=ptb?data=/srv/lake").data_in_object_storage
    with pytest.raises(ValueError, match="s3://<bucket>/<prefix>"):
        warehouse.parse_spec("ducklake:postgres:dbname=ptb?data=s3:///nobucket")


def test_checks_warn_when_object_storage_is_not_shared(settings):
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    from ptbsite.warehouse.checks import object_storage_needs_a_shared_catalog_and_cache as check

    settings.PTB_WAREHOUSE = "ducklake:sqlite:/srv/catalog.sqlite?data=s3://lake/ptb"
    assert {m.id for m in check()} == {"ptbsite.W001", "ptbsite.W002"}  # the tests' page cache is a local one
    settings.PTB_WAREHOUSE = "ducklake:postgres:dbname=ptb?data=/srv/lake"
    assert check() == []
    settings.PTB_WAREHOUSE = "ducklake:mysql:x?data=/y"
    assert [m.id for m in check()] == ["ptbsite.E001"]
    with pytest.raises(SystemCheckError, match="ptbsite.E001"):
        call_command("check")
