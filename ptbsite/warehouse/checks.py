"""Django system checks of the warehouse setting (``manage.py check``, and every management command that runs the
checks, ``serve`` included)."""
from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.core.cache import caches

from .spec import parse_spec, warehouse_spec
from .version import CACHE_ALIAS, shares_machines


@checks.register(checks.Tags.compatibility)
def object_storage_needs_a_shared_catalog_and_cache(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """A data folder in object storage is for several machines: warn when the catalog (SQLite: one machine's file)
    or the page cache (file-based: one machine's folder) cannot be shared, since each machine would then serve
    pages cached before another machine's writes until ``PTB_PAGE_CACHE_SECONDS`` (ptbsite.warehouse.version)."""
    try:
        spec = parse_spec(warehouse_spec())
    except ValueError as exc:
        return [checks.Error(str(exc), id="ptbsite.E001")]
    if not spec.data_in_object_storage:
        return []
    found: list[checks.CheckMessage] = []
    if spec.kind == "ducklake-sqlite":
        found.append(checks.Warning(
            "PTB_WAREHOUSE keeps its data in object storage but its catalog in a SQLite file: only this machine can "
            "use it", hint="use a PostgreSQL catalog, ducklake:postgres:<conninfo>?data=s3://...", id="ptbsite.W001"))
    if not shares_machines(caches[CACHE_ALIAS]):
        found.append(checks.Warning(
            "PTB_WAREHOUSE keeps its data in object storage but the page cache is this machine's folder: other "
            "machines' writes reach this one's cached pages only after PTB_PAGE_CACHE_SECONDS "
            f"({settings.PTB_PAGE_CACHE_SECONDS} s)",
            hint="set PTB_CACHE_URL=redis://<host>:6379/<db> on every web host", id="ptbsite.W002"))
    return found
