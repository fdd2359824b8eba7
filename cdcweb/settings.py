"""Settings, read once from the environment; the defaults run the embedded setup."""

from __future__ import annotations

import os
from pathlib import Path

from celery.schedules import crontab
from kombu import Queue

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str) -> str:
    """Return the variable, or the content of the file named by NAME_FILE, or default."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        return Path(file_name).read_text().strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    """Return a boolean variable: 1/true/yes/on are true, 0/false/no/off false."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    """Return an integer variable."""
    raw = os.environ.get(name)
    return default if raw is None or raw == "" else int(raw)


def env_float(name: str, default: float) -> float:
    """Return a decimal variable."""
    raw = os.environ.get(name)
    return default if raw is None or raw == "" else float(raw)


def database_config(url: str, sqlite_path: Path) -> dict:
    """Return the default database: DATABASE_URL if set, else SQLite tuned for concurrent workers."""
    if url:
        import dj_database_url

        return dj_database_url.parse(url, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60))
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": sqlite_path,
        "OPTIONS": {
            # Measured: without WAL, IMMEDIATE and a busy timeout, concurrent workers
            # fail with "database is locked" instead of waiting their turn.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        },
    }


VAR_DIR = Path(env_str("CDC_VAR_DIR", str(BASE_DIR / "var"))).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "insecure-cdcweb-development-key-change-me")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = [h for h in env_str("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "streams",
    "partitions",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves static/ (Plotly, htmx, CSS) with DEBUG off, under runserver and gunicorn alike.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "cdcweb.urls"
WSGI_APPLICATION = "cdcweb.wsgi.application"

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
            ],
        },
    },
]

DATABASES = {"default": database_config(env_str("DATABASE_URL", ""), VAR_DIR / "cdcweb.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

# ModelBackend's permissions in one query, not two (every API request checks one).
AUTHENTICATION_BACKENDS = ["cdcweb.auth.OneQueryModelBackend"]

# --- REST API ---------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Token first: an anonymous request then gets 401 with WWW-Authenticate, not 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "cdcweb.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["streams.api.permissions.RolePermission"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # orjson renders the 10,000-node lineage several times faster than the stdlib encoder.
    "DEFAULT_RENDERER_CLASSES": [
        "drf_orjson_renderer.renderers.ORJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PAGINATION_CLASS": "streams.api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
# Polled read-only API answers are served from the cache for this long (0 turns it off);
# see streams/api/cache.py. Local memory per process unless CACHE_URL names a shared one.
API_CACHE_SECONDS = env_float("CDC_API_CACHE_SECONDS", 1.0)
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": env_str("CACHE_URL", "")}
        if env_str("CACHE_URL", "")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": 1000}}
    )
}
SPECTACULAR_SETTINGS = {
    "TITLE": "cdcweb API",
    "DESCRIPTION": "Run and watch change-data-capture streams read from Spanner change streams.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    # The docs page's JavaScript and CSS come from static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "StreamStateEnum": "streams.models.Stream.State",
        "PartitionStateEnum": "partitions.models.Partition.State",
        "ReportKindEnum": "streams.models.Report.Kind",
    },
}

# --- Change stream reading -------------------------------------------------------------
CDC_LANDING_URI = env_str("CDC_LANDING_URI", str(VAR_DIR / "landing"))
# The official client's own variable; empty means real Spanner.
SPANNER_EMULATOR_HOST = env_str("SPANNER_EMULATOR_HOST", "")
CDC_LEASE_SECONDS = env_int("CDC_LEASE_SECONDS", 60)
CDC_MAX_CONSECUTIVE_FAILURES = env_int("CDC_MAX_CONSECUTIVE_FAILURES", 3)
CDC_RETRY_BACKOFF_MAX = env_int("CDC_RETRY_BACKOFF_MAX", 60)
CDC_STALL_HEARTBEATS = env_int("CDC_STALL_HEARTBEATS", 6)
CDC_LAG_SAMPLE_SECONDS = env_int("CDC_LAG_SAMPLE_SECONDS", 10)
CDC_LAG_RETENTION_DAYS = env_int("CDC_LAG_RETENTION_DAYS", 30)
CDC_SCHEDULE_SECONDS = env_float("CDC_SCHEDULE_SECONDS", 5.0)
CDC_STALL_CHECK_SECONDS = env_int("CDC_STALL_CHECK_SECONDS", 30)
# The change stream's retention (Spanner's default is one day): a paused stream must
# resume before its low watermark falls out of it; the dashboard warns at 25 % left.
CDC_STREAM_RETENTION_HOURS = env_int("CDC_STREAM_RETENTION_HOURS", 24)

# --- Spark reports ----------------------------------------------------------------------
SPARK_MASTER = env_str("SPARK_MASTER", "local[*]")
CDC_SPARK_DRIVER_MEMORY = env_str("CDC_SPARK_DRIVER_MEMORY", "640m")
CDC_REPORTS_DIR = Path(env_str("CDC_REPORTS_DIR", str(VAR_DIR / "reports"))).resolve()
# Where a report job writes its intermediate records (Parquet); a Hadoop URI every
# executor reaches (hdfs://, gs://) on a cluster. Empty: <the report's output>/_work.
CDC_SPARK_WORK_URI = env_str("CDC_SPARK_WORK_URI", "")
# A job past this is killed and the report fails, so no report stays RUNNING forever.
CDC_REPORT_TIMEOUT_SECONDS = env_int("CDC_REPORT_TIMEOUT_SECONDS", 3600)
CDC_REPORT_MAX_DAYS = env_int("CDC_REPORT_MAX_DAYS", 31)
# The cost report's price model (DESIGN §10): list prices for us-central1, verify them
# for your contract. Blank node-hour price: the edition's; blank overhead: measured.
CDC_PRICE_MODEL = {
    "retention_days": env_float("CDC_PRICE_RETENTION_DAYS", 1.0),
    "storage_usd_per_gib_month": env_float("CDC_PRICE_STORAGE_USD_PER_GIB_MONTH", 0.30),
    "edition": env_str("CDC_PRICE_EDITION", "standard"),
    "node_hour_usd": env_str("CDC_PRICE_NODE_HOUR_USD", ""),
    "nodes": env_float("CDC_PRICE_NODES", 1.0),
    "cpu_share_enabled": env_float("CDC_PRICE_CPU_SHARE_ENABLED", 0.10),
    "cpu_share_read_low": env_float("CDC_PRICE_CPU_SHARE_READ_LOW", 0.20),
    "cpu_share_read_high": env_float("CDC_PRICE_CPU_SHARE_READ_HIGH", 0.30),
    "overhead_factor": env_str("CDC_PRICE_OVERHEAD_FACTOR", ""),
}
# Shown beside the cost for comparison only (DESIGN §10): a Dataflow reader's list prices.
CDC_DATAFLOW_PRICES = {
    "vcpu_hour_usd": env_float("CDC_DATAFLOW_VCPU_HOUR_USD", 0.069),
    "gb_hour_usd": env_float("CDC_DATAFLOW_GB_HOUR_USD", 0.003557),
    "gib_processed_usd": env_float("CDC_DATAFLOW_GIB_PROCESSED_USD", 0.018),
}

# --- Celery -----------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    BROKER_DIR = VAR_DIR / "broker"
    for _folder in ("queue", "processed", "control"):
        (BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
    # kombu's own filesystem transport creates a message file before writing it, so a
    # worker can read it empty and die; ours writes a temp file and renames it.
    CELERY_BROKER_TRANSPORT = "partitions.broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # One folder in and out: every worker and beat share the same queue.
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        # Without it kombu writes its exchange table to ./control in the working directory.
        "control_folder": str(BROKER_DIR / "control"),
        # Measured: at kombu's default of 1 s the transport moved only a few tasks a second.
        "polling_interval": env_float("CDC_BROKER_POLLING_INTERVAL", 0.05),
    }
# Results are never read: tasks record their outcome in the database.
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
# Workers consume both queues, round robin. A child's first read goes to "urgent" so it
# does not wait behind every other partition's next window (goal: p95 <= 1 s from its
# last parent finishing to it running).
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = (Queue("urgent"), Queue("celery"))
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    # Each entry expires within its own period so a backlog of beats never piles up.
    "schedule-partitions": {
        "task": "partitions.tasks.schedule_partitions_task",
        "schedule": CDC_SCHEDULE_SECONDS,
        "options": {"expires": CDC_SCHEDULE_SECONDS},
    },
    "retry-failed-streams": {
        "task": "partitions.tasks.retry_failed_streams_task",
        "schedule": 5.0,
        "options": {"expires": 5.0},
    },
    "sample-lag": {
        "task": "partitions.tasks.sample_lag_task",
        "schedule": float(CDC_LAG_SAMPLE_SECONDS),
        "options": {"expires": float(CDC_LAG_SAMPLE_SECONDS)},
    },
    "detect-stalls": {
        "task": "partitions.tasks.detect_stalls_task",
        "schedule": float(CDC_STALL_CHECK_SECONDS),
        "options": {"expires": float(CDC_STALL_CHECK_SECONDS)},
    },
    "cleanup-lag-samples": {
        "task": "partitions.tasks.cleanup_lag_samples_task",
        "schedule": 3600.0,
        "options": {"expires": 3600.0},
    },
    # Yesterday's report per stream, once the day's last windows have surely landed.
    "daily-reports": {
        "task": "streams.tasks.schedule_daily_reports_task",
        "schedule": crontab(hour=0, minute=30),
        "options": {"expires": 3600.0},
    },
}

# Without collectstatic (the demo), WhiteNoise finds files in STATICFILES_DIRS directly.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every start without it
