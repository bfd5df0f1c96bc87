"""The Celery app. Broker from CELERY_BROKER_URL (settings); tasks are discovered in each app's tasks.py."""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")

app = Celery("ptbsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
