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
for _option in ("data_folder_in", "data_folder_out", "processed_folder"):
    if _folder := app.conf.broker_transport_options.get(_option):
        Path(_folder).mkdir(parents=True, exist_ok=True)
