"""Settings for the PostTrainBench Explorer.

Every setting comes from an environment variable with an embedded default, so a fresh clone runs with no
external service: DuckLake (a SQLite catalog and a Parquet folder under data/) for the warehouse, SQLite for
Django's own tables, kombu's filesystem transport for Celery.
"""
from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("PTB_DATA_DIR", BASE_DIR / "data"))



def _generated(name: str, env: str, length: int) -> str:
    """The environment variable ``env`` if set, else a random token made once and kept in DATA_DIR/``name``
    (mode 0600), so that no install runs on a value known from the source code, and every process of one
    install (web server, reaper, a worker on the same machine) shares it."""
    if os.environ.get(env):
        return os.environ[env]
    path = DATA_DIR / name
    if not path.exists():
        import secrets

        DATA_DIR.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process of this install made it first
            return path.read_text().strip()
        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(length))
    return path.read_text().strip()


def _secret_key() -> str:
    """DJANGO_SECRET_KEY, else DATA_DIR/secret_key (made once)."""
    return _generated("secret_key", "DJANGO_SECRET_KEY", 50)


SECRET_KEY = _secret_key()
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",  # login throttling (AXES_* below)
    "ninja",  # serves Swagger UI from its own static files (no CDN) at /api/docs
    "ptbsite",
    "leaderboard",
    "traces",
    "ingest",  # reading results trees into the record (manage.py ingest, reindex)
    "evaluator",
    "export",  # the static export (export_static); pages declared in each app's urls.py (ptbsite.distill)
    "demo",  # the demo generator's commands (make_demo_results, demo_worker_assets); no product app imports it
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Public pages from the cache (once per warehouse version), then at most PTB_MAX_INFLIGHT pages computed at
    # once per process (503 + Retry-After beyond); both before sessions, so a hit or a 503 costs next to nothing.
    "ptbsite.pagecache.PageCacheMiddleware",
    "ptbsite.overload.ConcurrencyLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "ptbsite.unavailable.ServiceUnavailableMiddleware",
    "ptbsite.warehouse.RequestScopeMiddleware",
    "axes.middleware.AxesMiddleware",  # a locked-out sign-in answers AXES_HTTP_RESPONSE_CODE (last, as axes asks)
]

# Login throttling (django-axes): after PTB_LOGIN_FAILURE_LIMIT failed sign-ins (/login/, /admin/login/, and staff
# API tokens: evaluator.permissions.staff_auth) from one address, or for one username, further attempts answer 429
# for PTB_LOGIN_LOCKOUT_SECONDS, the right password too; failures counted per username and per address separately
# (a token guess per address only: ptbsite.access.lockout_parameters). The address is REMOTE_ADDR. Reset:
# `manage.py axes_reset` (all), `axes_reset_ip ADDR`, `axes_reset_username NAME`.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = int(os.environ.get("PTB_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(seconds=int(os.environ.get("PTB_LOGIN_LOCKOUT_SECONDS", "900")))
AXES_LOCKOUT_PARAMETERS = "ptbsite.access.lockout_parameters"
AXES_HTTP_RESPONSE_CODE = 429
AXES_RESET_ON_SUCCESS = True
AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)  # never a client-sent header such as X-Forwarded-For
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"

ROOT_URLCONF = "ptbsite.urls"
# The site's own sign-in page (templates/registration/login.html); back to the home page after signing out.
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "ptbsite.context_processors.results_source",
            ],
        },
    },
]

WSGI_APPLICATION = "ptbsite.wsgi.application"

# Django's own tables (auth, sessions, admin, rerun jobs, audit): SQLite by default, PostgreSQL via DATABASE_URL.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'django.sqlite3'}"), conn_max_age=60
    )
}

# The warehouse (runs, scores, steps, verdicts): a DuckDB file path, or a DuckLake spec (see ptbsite.warehouse).
# Default: DuckLake with a SQLite catalog under data/, which several server processes and an ingest share.
PTB_WAREHOUSE = os.environ.get(
    "PTB_WAREHOUSE", f"ducklake:sqlite:{DATA_DIR / 'ducklake' / 'catalog.sqlite'}?data={DATA_DIR / 'ducklake' / 'data'}"
)
# DuckDB threads of each process's DuckLake instance (0: DuckDB's default, one per core). `serve` runs its workers
# with 1: their concurrency is the requests' threads, and one query per request on all cores made pages slower.
PTB_DUCKDB_THREADS = int(os.environ.get("PTB_DUCKDB_THREADS", "0"))
# DuckDB's allocator (the jemalloc built into its Python package) keeps the pages a query freed until the process
# allocates again; with this on (DuckDB's `allocator_background_threads`, one thread per process) it returns them to
# the system within ~1 s of the last query: a web process at rest after every page held 10-50 MB less RSS at K=90
# (bench/web_memory.py, bench/RESULTS.md, issue 24). 0 leaves DuckDB's default (off).
PTB_DUCKDB_ALLOCATOR_BACKGROUND_THREADS = os.environ.get("PTB_DUCKDB_ALLOCATOR_BACKGROUND_THREADS", "1") == "1"
# Runs an ingest's reading processes parsed that it stores in one transaction (ingest.tree): 1 is one
# transaction per run (bench/ingest_batch.py measures both).
PTB_INGEST_BATCH_RUNS = max(1, int(os.environ.get("PTB_INGEST_BATCH_RUNS", "32")))
# A DuckLake data folder in S3-compatible object storage (`?data=s3://bucket/prefix`): the endpoint (host:port; empty:
# AWS itself), region, addressing (`path` for MinIO, Ceph and most self-hosted servers; `vhost` for AWS), TLS, and the
# credentials, read from the usual AWS variables (ptbsite.warehouse.connections makes them a DuckDB secret).
PTB_S3_ENDPOINT = os.environ.get("PTB_S3_ENDPOINT", "")
PTB_S3_REGION = os.environ.get("PTB_S3_REGION") or os.environ.get("AWS_REGION", "us-east-1")
PTB_S3_URL_STYLE = os.environ.get("PTB_S3_URL_STYLE", "vhost")
PTB_S3_USE_SSL = os.environ.get("PTB_S3_USE_SSL", "1") == "1"
AWS_ACCESS_KEY_ID = os.environ.get("AWS_ACCESS_KEY_ID", "")
AWS_SECRET_ACCESS_KEY = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
AWS_SESSION_TOKEN = os.environ.get("AWS_SESSION_TOKEN", "")
# The suite a page or command uses when none is named (a suites/<id>.json file).
DEFAULT_SUITE = os.environ.get("PTB_DEFAULT_SUITE", "posttrainbench")
# How long a unit of work is retried on a lock or commit conflict before the page answers 503 (seconds).
PTB_WAREHOUSE_RETRY_SECONDS = float(os.environ.get("PTB_WAREHOUSE_RETRY_SECONDS", "10"))
# `compact_warehouse` removes a DuckLake snapshot or an unneeded Parquet file once it is this old (seconds): longer
# than any read may last (ptbsite.warehouse.maintenance).
PTB_COMPACT_KEEP_SECONDS = float(os.environ.get("PTB_COMPACT_KEEP_SECONDS", "3600"))

# Caches. "default" (local memory, per process): small things such as the worker census. "pages": public pages
# computed once per warehouse version (ptbsite.pagecache) and the version's shared copy; a file-based cache
# under DATA_DIR/cache/pages that every process of the install shares, or Redis with PTB_CACHE_URL (or CACHE_URL).
PTB_CACHE_URL = os.environ.get("PTB_CACHE_URL") or os.environ.get("CACHE_URL", "")
PTB_PAGE_CACHE = os.environ.get("PTB_PAGE_CACHE", "1") == "1"  # 0: compute every page every time
PTB_PAGE_CACHE_SECONDS = int(os.environ.get("PTB_PAGE_CACHE_SECONDS", "86400"))  # an entry's longest life
PTB_PAGE_CACHE_MAX_BYTES = int(os.environ.get("PTB_PAGE_CACHE_MAX_BYTES", str(8 * 1024 * 1024)))  # larger: not kept
PTB_PAGE_MAX_AGE = int(os.environ.get("PTB_PAGE_MAX_AGE", "0"))  # Cache-Control max-age of public pages (seconds)
# While one request computes a page of a new version, others get the previous version's for at most this long.
PTB_PAGE_CACHE_STALE_SECONDS = int(os.environ.get("PTB_PAGE_CACHE_STALE_SECONDS", "10"))
PTB_PAGE_MEMORY_BYTES = int(os.environ.get("PTB_PAGE_MEMORY_BYTES", str(32 * 1024 * 1024)))  # per process
# The pages `serve` (at start) and `ingest` (after its last commit) compute into the cache (ptbsite.pagecache.warm),
# as URL names; PTB_PAGE_WARM=0 turns warming off.
PTB_PAGE_WARM: tuple[str, ...] = () if os.environ.get("PTB_PAGE_WARM", "1") == "0" else (
    "leaderboard:index", "api:leaderboard", "leaderboard:plots", "leaderboard:plot-time-vs-score",
    "leaderboard:plot-usage-vs-score", "leaderboard:plot-time-spent", "leaderboard:plot-per-benchmark",
    "leaderboard:plot-budget-and-effort", "api:time_vs_score", "api:usage_vs_score", "api:time_spent",
    "api:budget_and_effort", "api:per_benchmark", "traces:runs", "traces:analysis",
)
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": PTB_CACHE_URL, "KEY_PREFIX": "ptb-throttle"}
        if PTB_CACHE_URL else
        {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
         "LOCATION": str((DATA_DIR / "cache" / "throttle").resolve())}
    ),
    "pages": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": PTB_CACHE_URL,
         "KEY_PREFIX": "ptb", "TIMEOUT": PTB_PAGE_CACHE_SECONDS}
        if PTB_CACHE_URL else
        {"BACKEND": "ptbsite.filecache.AtomicAddFileBasedCache", "LOCATION": str((DATA_DIR / "cache" / "pages").resolve()),
         "TIMEOUT": PTB_PAGE_CACHE_SECONDS, "OPTIONS": {"MAX_ENTRIES": int(os.environ.get("PTB_PAGE_CACHE_ENTRIES", "3000"))}}
    ),
}
# Load shedding (ptbsite.overload): pages computed at once per server process; how long a request waits for a
# slot before it answers 503; the Retry-After of that 503 (seconds).
PTB_MAX_INFLIGHT = int(os.environ.get("PTB_MAX_INFLIGHT", "3"))
PTB_SLOT_WAIT_SECONDS = float(os.environ.get("PTB_SLOT_WAIT_SECONDS", "3"))
PTB_OVERLOAD_RETRY_AFTER = int(os.environ.get("PTB_OVERLOAD_RETRY_AFTER", "2"))

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# plotly.js is served from the copy the plotly package ships (never a CDN), under static/plotly/. The package is
# found, not imported: web workers never import plotly (issue 24; its import alone is ~7 MB of every process).
import importlib.util as _importlib_util  # noqa: E402

_PLOTLY = _importlib_util.find_spec("plotly")
if _PLOTLY is None or not _PLOTLY.origin:
    raise ImportError("plotly (the package that ships plotly.js) is not installed: pip install -r requirements.txt")
STATICFILES_DIRS = [BASE_DIR / "static", ("plotly", Path(_PLOTLY.origin).parent / "package_data")]
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Celery: kombu's filesystem transport needs no service; Redis or RabbitMQ in production and in tests.
_BROKER_DIR = DATA_DIR / "broker"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(_BROKER_DIR / "queue"),
        "data_folder_out": str(_BROKER_DIR / "queue"),
        "processed_folder": str(_BROKER_DIR / "processed"),
        "control_folder": str(_BROKER_DIR / "control"),  # kombu's default is ./control in the working directory
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {}
)
# Redis: a message a worker took but never acknowledged (acks_late; the worker was killed) is delivered again after
# PTB_BROKER_VISIBILITY_SECONDS; workers sweep for such messages every few seconds. The default is the job timeout
# plus 10 minutes, not kombu's 3600: a message delivered again while its job still runs reaches an idle worker,
# which is told "nothing to do" and acknowledges it, and that deletes the message, so a job over an hour long whose
# worker died later could no longer be retried.
_JOB_TIMEOUT_SECONDS = int(os.environ.get("PTB_JOB_TIMEOUT_SECONDS", str(6 * 3600)))
if CELERY_BROKER_URL.startswith(("redis", "rediss")):
    _visibility = int(os.environ.get("PTB_BROKER_VISIBILITY_SECONDS") or _JOB_TIMEOUT_SECONDS + 600)
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": _visibility,
                                       "unacked_restore_interval": max(1, min(10, _visibility // 2)),
                                       "unacked_restore_throttle": 1}
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# Rerun jobs (the evaluator app). Workers call back to PTB_PUBLIC_URL with "Authorization: Bearer
# PTB_WORKER_TOKEN" (the embedded default: DATA_DIR/worker_token, made once and shared by the server and a worker
# on the same machine) plus the job's own credential from the task message (signed with SECRET_KEY, valid for
# PTB_JOB_CREDENTIAL_SECONDS). A running job whose last heartbeat is older than PTB_JOB_STALE_SECONDS is failed as
# "worker lost" (manage.py reap_jobs); a worker stops a job after PTB_JOB_TIMEOUT_SECONDS. A queued job that no
# worker took within PTB_JOB_PICKUP_SECONDS says on its page whether any worker listens on its queue.
PTB_PUBLIC_URL = os.environ.get("PTB_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")
PTB_WORKER_TOKEN = _generated("worker_token", "PTB_WORKER_TOKEN", 32)
PTB_JOB_STALE_SECONDS = int(os.environ.get("PTB_JOB_STALE_SECONDS", "120"))
PTB_JOB_HEARTBEAT_SECONDS = int(os.environ.get("PTB_JOB_HEARTBEAT_SECONDS", "10"))
PTB_JOB_TIMEOUT_SECONDS = _JOB_TIMEOUT_SECONDS
PTB_JOB_PICKUP_SECONDS = int(os.environ.get("PTB_JOB_PICKUP_SECONDS", "30"))
PTB_JOB_CREDENTIAL_SECONDS = int(os.environ.get("PTB_JOB_CREDENTIAL_SECONDS", str(3 * 24 * 3600)))
PTB_JOB_QUEUE = os.environ.get("PTB_JOB_QUEUE", "celery")  # the Celery queue rerun and judge jobs go to
PTB_WORKER_SEEN_SECONDS = int(os.environ.get("PTB_WORKER_SEEN_SECONDS", "15"))  # how long a worker census is kept
PTB_WORKER_CENSUS_TIMEOUT = float(os.environ.get("PTB_WORKER_CENSUS_TIMEOUT", "2"))  # seconds workers have to answer
PTB_EVAL_LOG_DIR = Path(os.environ.get("PTB_EVAL_LOG_DIR", DATA_DIR / "evals"))  # uploaded inspect .eval logs
# Local copies of benchmark datasets the rerun form offers (folders in the Hugging Face `datasets` cache layout,
# each with a ptb-dataset.json; paths as the workers see them): evaluator.hf_cache.
PTB_LOCAL_DATASETS_DIR = Path(os.environ.get("PTB_LOCAL_DATASETS_DIR", DATA_DIR / "datasets"))
# Workers: the harness checkout (aisa-group/PostTrainBench) whose src/eval/templates/ chat templates and
# HealthBench data the evaluations use (PTB_TEMPLATES_DIR overrides the templates folder), and the judge model
# (an inspect-ai model name, e.g. "openai/gpt-5-mini") that the LLM-judged benchmarks need; empty: refused.
PTB_HARNESS_DIR = Path(os.environ["PTB_HARNESS_DIR"]) if os.environ.get("PTB_HARNESS_DIR") else None
PTB_TEMPLATES_DIR = (Path(os.environ["PTB_TEMPLATES_DIR"]) if os.environ.get("PTB_TEMPLATES_DIR")
                     else PTB_HARNESS_DIR / "src" / "eval" / "templates" if PTB_HARNESS_DIR else None)
PTB_EVAL_JUDGE_MODEL = os.environ.get("PTB_EVAL_JUDGE_MODEL", "")
# The judge re-run (a Celery job; the worker runs the command): a JSON list of argv (no shell), e.g.
# ["python", "judge.py", "{run_dir}"]; empty: no re-runs. Read by the server (to offer it) and by workers.
PTB_JUDGE_COMMAND: list[str] = json.loads(os.environ.get("PTB_JUDGE_COMMAND") or "[]")
PTB_JUDGE_TIMEOUT_SECONDS = int(os.environ.get("PTB_JUDGE_TIMEOUT_SECONDS", "900"))
# Ingest limits (ingest.files, ingest.tree): a file of a run larger than PTB_MAX_TRACE_BYTES is not
# read (refused, reported); a run whose reading takes longer than PTB_INGEST_RUN_SECONDS is stopped and reported,
# and the other runs are stored.
PTB_MAX_TRACE_BYTES = int(os.environ.get("PTB_MAX_TRACE_BYTES", "2000000000"))
PTB_INGEST_RUN_SECONDS = float(os.environ.get("PTB_INGEST_RUN_SECONDS", "600"))
# The public's challenges of a verdict (traces.challenges): how many one address may send ("<n>/<s|m|h|d>", ninja's
# throttle syntax); counted in the "throttle" cache, shared by every process (Redis with PTB_CACHE_URL, else files).
PTB_CHALLENGE_RATE = os.environ.get("PTB_CHALLENGE_RATE", "5/h")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
