"""Django models of the traces app: only a name for Django's admin history. Runs, steps and reviewers' overrides
live in the warehouse (ptbsite.warehouse), not in Django's database."""
from __future__ import annotations

from django.db import models


class VerdictOverride(models.Model):
    """What the admin's history ("Recent actions", LogEntry) calls a reviewer's override (``traces.review``), so it
    is listed as a "Verdict override" named after its run, not as "Unknown content". The overrides themselves are
    rows of the warehouse's ``verdict_overrides`` (``traces.services.override_verdict``): this model has no table
    (``managed = False``) and is never queried; its content type is all the history needs."""

    class Meta:
        managed = False
        db_table = "traces_verdict_override_not_stored"  # never created: the warehouse holds the overrides
        verbose_name = "verdict override"
        default_permissions = ()
