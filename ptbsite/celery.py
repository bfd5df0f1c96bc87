"""The Celery app. Broker from CELERY_BROKER_URL (settings); tasks are discovered in each app's tasks.py."""
from __future__ import annotations

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")

app = Celery("ptbsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# kombu's filesystem transport (the embedded default) expects its folders to exist.
for _option in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
    if _folder := app.conf.broker_transport_options.get(_option):
        Path(_folder).mkdir(parents=True, exist_ok=True)

def broker_available(*, timeout: float = 1.0) -> bool:
    """Whether the Celery broker (CELERY_BROKER_URL) accepts a connection within ``timeout`` seconds.

    Views that queue a job call it first and raise ``ptbsite.unavailable.BrokerUnavailable`` (a 503 with a
    clear message) when it is False, rather than blocking on kombu's reconnect loop.
    """
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=0, timeout=timeout)
    except Exception:  # noqa: BLE001 - any failure to connect means "not available"
        return False
    return True
