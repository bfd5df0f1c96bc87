"""WSGI entry point (gunicorn ptbsite.wsgi)."""
import os
import sys

# DuckDB's Python client (1.5) imports pandas the first time it binds a query parameter whenever pandas is importable:
# ~125 MB of RSS in every web worker. No page uses pandas (it is not a requirement of the site; inspect-ai brings it
# for the workers), so a web worker marks it absent and DuckDB takes plain Python values (bench/web_memory.py).
sys.modules.setdefault("pandas", None)  # type: ignore[arg-type]

from django.core.wsgi import get_wsgi_application  # noqa: E402 (after the pandas mark)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
application = get_wsgi_application()
