"""The project package. The Celery app lives in ``ptbsite.celery`` (``celery -A ptbsite`` finds it there) and is
imported where a job is queued, not here: a web worker that only serves pages never loads Celery (issue 24)."""
