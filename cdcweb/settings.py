"""Settings, read once from the environment; the defaults run the embedded setup."""

from __future__ import annotations

import ipaddress
import math
import os
from datetime import timedelta
from pathlib import Path

import orjson
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from cdcweb import embedded_db

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


def env_networks(name: str) -> tuple[str, ...]:
    """Return a comma-separated list of CIDRs, each checked (a typo stops the process here)."""
    texts = tuple(t.strip() for t in env_str(name, "").split(",") if t.strip())
    for text in texts:
        try:
            ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {text!r} is not a network such as 10.0.0.0/8") from None
    return texts


def env_fernet_keys(name: str) -> tuple[str, ...]:
    """Return comma-separated Fernet keys, each checked (a bad one stops the process here)."""
    from cryptography.fernet import Fernet

    keys = tuple(k.strip() for k in env_str(name, "").split(",") if k.strip())
    for key in keys:
        try:
            Fernet(key)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: not a Fernet key (32 url-safe base64 bytes); make one with "
                "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
            ) from None
    return keys


def every(seconds: float) -> dict:
    """Return a beat entry's schedule and options: every `seconds`, each run expiring before the next.

    Beat's database scheduler (cdcweb/beat.py) keeps an expiry in whole seconds, at least one.
    """
    return {"schedule": float(seconds), "options": {"expire_seconds": max(1, math.ceil(seconds))}}


def database_config(url: str, var_dir: Path) -> dict:
    """Return the default database: DATABASE_URL if set, else the embedded PostgreSQL in var_dir.

    A "sqlite:///PATH" URL selects a SQLite file, tuned for concurrent workers (one host only).
    """
    if url.startswith("sqlite:///"):
        return sqlite_config(Path(url.removeprefix("sqlite:///")))
    if url:
        import dj_database_url

        return dj_database_url.parse(
            url, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60), conn_health_checks=True
        )
    # Started by the entry points (manage.py, the Celery worker and beat, WSGI): embedded_db.
    return {
        **embedded_db.django_settings(var_dir),
        "CONN_MAX_AGE": env_int("DATABASE_CONN_MAX_AGE", 60),
        "CONN_HEALTH_CHECKS": True,
    }


def sqlite_config(sqlite_path: Path) -> dict:
    """Return a SQLite database tuned for concurrent workers."""
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


VAR_DIR = embedded_db.default_var_dir({"CDC_VAR_DIR": env_str("CDC_VAR_DIR", "")})
VAR_DIR.mkdir(parents=True, exist_ok=True)

# The web server refuses this key unless DJANGO_DEBUG is on (cdcweb/security.py); management
# commands, workers and tests accept it, and the demo writes a random one to CDC_VAR_DIR.
DEVELOPMENT_SECRET_KEY = "insecure-cdcweb-development-key-change-me"
SECRET_KEY = env_str("DJANGO_SECRET_KEY", DEVELOPMENT_SECRET_KEY)
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = [h for h in env_str("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]
# Served through a proxy that terminates TLS and sets X-Forwarded-Proto (and -For): trust them.
CDC_BEHIND_TLS_PROXY = env_bool("CDC_BEHIND_TLS_PROXY", False)
# Served over HTTPS (by the proxy above, or gunicorn's own certificate): secure cookies, HSTS,
# and plain HTTP redirected. Off by default: the demo serves http://127.0.0.1:8000.
CDC_HTTPS = env_bool("CDC_HTTPS", CDC_BEHIND_TLS_PROXY)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "axes",
    "csp",
    "django_guid",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "streams",
    "partitions",
    "cdcweb.dashboard",
    "cdcweb.reports",
    "cdcweb.alerts",
    "cdcweb.accounts",
    "cdcweb.retention",
    "django_celery_beat",
]

MIDDLEWARE = [
    # First, so every log line of the request, even the security middleware's, carries its id.
    "django_guid.middleware.guid_middleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves static/ (Plotly, htmx, CSS) with DEBUG off, under runserver and gunicorn alike.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A logged-in user in no role gets 403 from every page and the admin (cdcweb/access.py).
    "cdcweb.access.RoleRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "cdcweb.urls"

# --- Logs -------------------------------------------------------------------------------
# One JSON object per line on stderr, a traceback inside its record (never spread over
# lines a collector would split), with the id of the request that logged it. The id is the
# request's X-Request-ID when that is a UUID (a proxy's), else a new one; the answer carries it.
CDC_LOG_LEVEL = env_str("CDC_LOG_LEVEL", "WARNING").upper()
CDC_LEASE_LOG_LEVEL = env_str("CDC_LEASE_LOG_LEVEL", "INFO").upper()
DJANGO_GUID = {"GUID_HEADER_NAME": "X-Request-ID", "EXPOSE_HEADER": False}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "django_guid.log_filters.CorrelationId", "correlation_id_field": "request_id"}
    },
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": ["levelname", "name", "message", "request_id"],
            "rename_fields": {"levelname": "level", "name": "logger"},
            "timestamp": "time",
        }
    },
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
            "formatter": "json",
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["stderr"], "level": CDC_LOG_LEVEL},
    "loggers": {
        # Django's own handlers print only with DEBUG on (and mail only with ADMINS): send its
        # records, a 500's traceback first of all, to the one handler above instead.
        "django": {"handlers": [], "level": CDC_LOG_LEVEL, "propagate": True},
        # runserver's line per request (gunicorn keeps its own access log).
        "django.server": {"handlers": [], "level": "INFO", "propagate": True},
        # A lease's start and end at INFO; DEBUG adds a line per renewal (one per checkpoint).
        "partitions.lease": {"level": CDC_LEASE_LOG_LEVEL, "propagate": True},
    },
}
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

DATABASES = {"default": database_config(env_str("DATABASE_URL", ""), VAR_DIR)}

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

# First the lockout of repeated failed logins (django-axes, for the login form, the admin and
# the token endpoint), then ModelBackend with its permissions in one query, not two.
AUTHENTICATION_BACKENDS = ["cdcweb.auth.LockoutBackend", "cdcweb.auth.OneQueryModelBackend"]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in (
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    )
]
# Not a check: it revokes the user's API tokens once a new password is saved (Django calls every
# validator's password_changed then).
AUTH_PASSWORD_VALIDATORS.append({"NAME": "cdcweb.accounts.tokens.RevokeTokensOnPasswordChange"})

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
    # Non-string keys: a list field's errors are keyed by item index ({"key_columns": {0: [...]}}).
    "ORJSON_RENDERER_OPTIONS": (orjson.OPT_NON_STR_KEYS,),
    "DEFAULT_RENDERER_CLASSES": [
        "drf_orjson_renderer.renderers.ORJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PAGINATION_CLASS": "streams.api.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Only the token endpoints set a throttle scope (cdcweb/accounts/api.py), keyed by the client
    # address as the login lockout finds it (cdcweb/lockout.py).
    "DEFAULT_THROTTLE_RATES": {"auth": env_str("CDC_AUTH_THROTTLE_RATE", "10/minute")},
}
# Polled read-only API answers are served from the cache for this long (0 turns it off);
# see streams/api/cache.py. Local memory per process unless CACHE_URL names a shared one.
API_CACHE_SECONDS = env_float("CDC_API_CACHE_SECONDS", 1.0)
# An API token's user and a user's permissions are kept this long (0 turns it off); see
# cdcweb/auth.py: revocations and role changes through the ORM are seen at once.
CDC_API_AUTH_CACHE_SECONDS = env_float("CDC_API_AUTH_CACHE_SECONDS", 1.0)
# Answers larger than this are not cached (one entry must not crowd out the rest).
CDC_API_CACHE_MAX_BYTES = env_int("CDC_API_CACHE_MAX_BYTES", 1_048_576)
# Bounds of one lineage or lag answer; past them the API answers 400 "narrow the window".
CDC_API_MAX_WINDOW_DAYS = env_int("CDC_API_MAX_WINDOW_DAYS", 31)
CDC_API_MAX_LINEAGE_NODES = env_int("CDC_API_MAX_LINEAGE_NODES", 20_000)
CDC_API_MAX_LAG_POINTS = env_int("CDC_API_MAX_LAG_POINTS", 50_000)
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": env_str("CACHE_URL", "")}
        if env_str("CACHE_URL", "")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": 1000}}
    )
}
SPECTACULAR_SETTINGS = {
    "TITLE": "cdcweb API",
    "DESCRIPTION": "Run and watch change-data-capture streams from Google's databases.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs pages are for users with a role (the pages log in through the form).
    "SERVE_PERMISSIONS": ["streams.api.permissions.HasRole"],
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    # The docs page's JavaScript and CSS come from static files, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "StreamStateEnum": "streams.models.Stream.State",
        "PartitionStateEnum": "partitions.models.Partition.State",
        "ReportKindEnum": "cdcweb.reports.models.Report.Kind",
        "ReportStatusEnum": "cdcweb.reports.models.Report.Status",
        "AlertKindEnum": "cdcweb.alerts.models.AlertRule.Kind",
        "AlertStateEnum": "cdcweb.alerts.models.Alert.State",
        "ChannelKindEnum": "cdcweb.alerts.models.Channel.Kind",
        "DeliveryEventEnum": "cdcweb.alerts.models.DeliveryAttempt.Event",
        "DeliveryStatusEnum": "cdcweb.alerts.models.DeliveryAttempt.Status",
        "StreamOperationStatusEnum": "streams.models.StreamOperation.Status",
    },
}

# --- Reading sources ----------------------------------------------------------------------
CDC_LANDING_URI = env_str("CDC_LANDING_URI", str(VAR_DIR / "landing"))
# The official client's own variable; empty means real Spanner.
SPANNER_EMULATOR_HOST = env_str("SPANNER_EMULATOR_HOST", "")
CDC_LEASE_SECONDS = env_int("CDC_LEASE_SECONDS", 60)
# A read checkpoints (lands, then stores its watermark) every heartbeat interval, or
# every this many seconds if that is longer: the live edge within seconds, one database
# write per partition per interval whatever the record rate (partitions.pipeline.window.checkpoint_seconds).
CDC_CHECKPOINT_SECONDS = env_float("CDC_CHECKPOINT_SECONDS", 2.0)
# A live read (partitions/pipeline/live.py) lands and stores a record within this long of
# receiving it, whatever the interval above: a checkpoint waits at most this for records.
CDC_CHECKPOINT_DATA_SECONDS = env_float("CDC_CHECKPOINT_DATA_SECONDS", 0.5)
# A partition more than two windows behind reads up to this many windows in one query
# (partitions.pipeline.window.window_end); 1 reads a backlog window by window.
CDC_CATCH_UP_WINDOWS = env_int("CDC_CATCH_UP_WINDOWS", 10)
CDC_MAX_CONSECUTIVE_FAILURES = env_int("CDC_MAX_CONSECUTIVE_FAILURES", 3)
CDC_RETRY_BACKOFF_MAX = env_int("CDC_RETRY_BACKOFF_MAX", 60)
CDC_STALL_HEARTBEATS = env_int("CDC_STALL_HEARTBEATS", 6)
CDC_LAG_SAMPLE_SECONDS = env_int("CDC_LAG_SAMPLE_SECONDS", 10)
CDC_LAG_RETENTION_DAYS = env_int("CDC_LAG_RETENTION_DAYS", 30)
CDC_SCHEDULE_SECONDS = env_float("CDC_SCHEDULE_SECONDS", 5.0)
# Beat's sweeps of work whose task was lost (a start, a report) run this often.
CDC_SWEEP_SECONDS = env_float("CDC_SWEEP_SECONDS", 15.0)
# A stream STARTING this long with no start task holding it moves to FAILED, saying so.
CDC_START_TIMEOUT_SECONDS = env_int("CDC_START_TIMEOUT_SECONDS", 600)
CDC_STALL_CHECK_SECONDS = env_int("CDC_STALL_CHECK_SECONDS", 30)
# Watched streams (Datastream): beat polls every one this often; each stream's objects are
# listed every CDC_WATCH_OBJECTS_EVERY-th poll (one ListStreamObjects each), metrics over the
# last CDC_WATCH_METRICS_WINDOW_SECONDS every poll.
CDC_WATCH_SECONDS = env_float("CDC_WATCH_SECONDS", 10.0)
CDC_WATCH_OBJECTS_EVERY = env_int("CDC_WATCH_OBJECTS_EVERY", 6)
CDC_WATCH_METRICS_WINDOW_SECONDS = env_float("CDC_WATCH_METRICS_WINDOW_SECONDS", 300.0)

# --- Spark reports ----------------------------------------------------------------------
SPARK_MASTER = env_str("SPARK_MASTER", "local[*]")
CDC_SPARK_DRIVER_MEMORY = env_str("CDC_SPARK_DRIVER_MEMORY", "640m")
CDC_REPORTS_DIR = Path(env_str("CDC_REPORTS_DIR", str(VAR_DIR / "reports"))).resolve()
# Where a report job writes its intermediate records (Parquet); a Hadoop URI every
# executor reaches (hdfs://, gs://) on a cluster. Empty: <the report's output>/_work.
CDC_SPARK_WORK_URI = env_str("CDC_SPARK_WORK_URI", "")
# The landing zone as the Spark cluster reads it (a Hadoop URI: s3a://, gs://, a shared
# path), when it differs from the readers' pyarrow URI (s3://...?endpoint_override=...).
CDC_SPARK_LANDING_URI = env_str("CDC_SPARK_LANDING_URI", "")  # empty: CDC_LANDING_URI
# A job past this is killed and the report fails, so no report stays RUNNING forever.
CDC_REPORT_TIMEOUT_SECONDS = env_int("CDC_REPORT_TIMEOUT_SECONDS", 3600)
CDC_REPORT_MAX_DAYS = env_int("CDC_REPORT_MAX_DAYS", 31)
# More environment variables the Spark job may see (cdcweb/reports/command.py lists the rest).
CDC_SPARK_ENV_PASSTHROUGH = frozenset(n for n in env_str("CDC_SPARK_ENV_PASSTHROUGH", "").split(",") if n)
# The cost report's price model is the stream's kind's (partitions/sources/<kind>/: list
# prices for us-central1, every figure with its source); each one set here replaces the
# kind's for every report. Blank: the kind's.
CDC_PRICE_MODEL = {
    name: env_str(f"CDC_PRICE_{name.upper()}", "")
    for name in (
        "retention_days", "storage_usd_per_gib_month", "edition", "node_hour_usd", "nodes",
        "cpu_share_enabled", "cpu_share_read_low", "cpu_share_read_high", "overhead_factor",
    )
}  # fmt: skip
# Shown beside the cost for comparison only (DESIGN §10): a Dataflow reader's list prices.
CDC_DATAFLOW_PRICES = {
    "vcpu_hour_usd": env_float("CDC_DATAFLOW_VCPU_HOUR_USD", 0.069),
    "gb_hour_usd": env_float("CDC_DATAFLOW_GB_HOUR_USD", 0.003557),
    "gib_processed_usd": env_float("CDC_DATAFLOW_GIB_PROCESSED_USD", 0.018),
}

# --- Retention (cdcweb/retention) -------------------------------------------------------
# Beat deletes what is older than these many days (0: keep for ever): stream errors, alert
# delivery attempts, resolved alerts (with their attempts), finished reports (with their
# output folders) and, only if set, landed files (whole date=YYYY-MM-DD folders).
CDC_KEEP_ERRORS_DAYS = env_int("CDC_KEEP_ERRORS_DAYS", 30)
CDC_KEEP_DELIVERIES_DAYS = env_int("CDC_KEEP_DELIVERIES_DAYS", 30)
CDC_KEEP_RESOLVED_ALERTS_DAYS = env_int("CDC_KEEP_RESOLVED_ALERTS_DAYS", 90)
CDC_KEEP_REPORTS_DAYS = env_int("CDC_KEEP_REPORTS_DAYS", 90)
CDC_LANDING_KEEP_DAYS = env_int("CDC_LANDING_KEEP_DAYS", 0)
CDC_RETENTION_SECONDS = env_float("CDC_RETENTION_SECONDS", 3600.0)

# --- Alerts (cdcweb/alerts) -------------------------------------------------------------
# Beat evaluates every rule from stored progress, lag samples and partition rows this often.
CDC_ALERT_EVALUATE_SECONDS = env_float("CDC_ALERT_EVALUATE_SECONDS", 30.0)
# One webhook, Slack or SMTP call gives up after this many seconds (an attempt, then a retry).
CDC_ALERT_DELIVERY_TIMEOUT = env_float("CDC_ALERT_DELIVERY_TIMEOUT", 5.0)
# Webhook and Slack URLs must be https:// to public addresses; these networks (CIDRs, comma
# separated) are allowed too, and plain http:// only into them (cdcweb/alerts/outbound.py).
CDC_WEBHOOK_ALLOW_NETWORKS = env_networks("CDC_WEBHOOK_ALLOW_NETWORKS")
# Channel secrets (webhook signing keys, Slack URLs) are stored encrypted under these Fernet keys:
# the first encrypts, all decrypt (cdcweb/encryption.py). Unset: a key derived from SECRET_KEY.
CDC_SECRETS_KEY = env_fernet_keys("CDC_SECRETS_KEY")
# Retries after a transient failure (timeout, refused connection, 408/425/429/5xx), each after
# an exponential, jittered backoff: up to BACKOFF * 2^n seconds, at most BACKOFF_MAX.
CDC_ALERT_DELIVERY_RETRIES = env_int("CDC_ALERT_DELIVERY_RETRIES", 6)
CDC_ALERT_RETRY_BACKOFF = env_int("CDC_ALERT_RETRY_BACKOFF", 5)
CDC_ALERT_RETRY_BACKOFF_MAX = env_int("CDC_ALERT_RETRY_BACKOFF_MAX", 300)
# The dashboard's address as receivers reach it, for the links in notifications.
CDC_ALERT_BASE_URL = env_str("CDC_ALERT_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
# "No data change records for N minutes while RUNNING": off unless asked for, because an
# idle table is normal for many streams.
CDC_ALERTS_NO_DATA = env_bool("CDC_ALERTS_NO_DATA", False)
# Email channels send through Django's mail backend (SMTP unless EMAIL_BACKEND says otherwise).
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = CDC_ALERT_DELIVERY_TIMEOUT
DEFAULT_FROM_EMAIL = env_str("CDC_ALERT_EMAIL_FROM", "cdcweb@localhost")

# --- Celery -----------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    BROKER_DIR = VAR_DIR / "broker"
    for _folder in ("queue", "processed", "control"):
        (BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
    # kombu's own filesystem transport creates a message file before writing it, so a
    # worker can read it empty and die; ours writes a temp file and renames it.
    CELERY_BROKER_TRANSPORT = "cdcweb.broker:Transport"
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
# Four queues, served by separate worker processes in production (Procfile, docs):
# - "urgent" and "celery": reads. A child's first read goes to "urgent" so it does not
#   wait behind every other partition's next window (goal: p95 <= 1 s from its last
#   parent finishing to it running). The read worker runs a pool of threads
#   (CDC_READ_THREADS, 32 in the Procfile) for windows that catch up; a read that
#   reaches the live edge leaves the pool for a thread of its own (partitions/pipeline/
#   live.py), so the pool's size does not bound how many live partitions a host follows.
# - "housekeeping": beat's scheduling, lag samples, stall checks and sweeps, and the
#   start and drain tasks. Its own worker, so that no read backlog delays them.
# - "reports": Spark jobs, which run for minutes; their own worker too.
# - "alerts": notifications to webhooks, Slack and mail, with retries. Their own worker, so
#   a slow or failing receiver (up to CDC_ALERT_DELIVERY_TIMEOUT per attempt) never holds a
#   housekeeping thread that lag samples and the alert evaluation itself need.
# A worker started without -Q consumes all five (one process does everything).
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = (
    Queue("urgent"), Queue("celery"), Queue("housekeeping"), Queue("reports"), Queue("alerts"),
)  # fmt: skip
CELERY_TASK_ROUTES = {
    "partitions.pipeline.tasks.read_partition_task": {"queue": "celery"},
    "partitions.pipeline.tasks.*": {"queue": "housekeeping"},
    "partitions.watch.tasks.*": {"queue": "housekeeping"},
    # The reports' sweep must not wait behind the reports it sweeps.
    "cdcweb.reports.tasks.sweep_reports_task": {"queue": "housekeeping"},
    "cdcweb.reports.tasks.*": {"queue": "reports"},
    "cdcweb.alerts.tasks.evaluate_alerts_task": {"queue": "housekeeping"},
    "cdcweb.alerts.tasks.deliver_alert_task": {"queue": "alerts"},
    "cdcweb.retention.tasks.*": {"queue": "housekeeping"},
}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"
# Beat keeps its schedule in the database (cdcweb/beat.py: django-celery-beat's tables), not in
# a pickle shelve file; this dict is what it writes there at start.
CELERY_BEAT_SCHEDULER = "cdcweb.beat:Scheduler"
# No result backend: nothing for beat's backend_cleanup entry to clean.
CELERY_RESULT_EXPIRES = None
PIPELINE, ALERTS = "partitions.pipeline.tasks", "cdcweb.alerts.tasks"
CELERY_BEAT_SCHEDULE = {
    # Each entry expires within its own period so a backlog of beats never piles up.
    "schedule-partitions": {"task": f"{PIPELINE}.schedule_partitions_task", **every(CDC_SCHEDULE_SECONDS)},
    "retry-failed-streams": {"task": f"{PIPELINE}.retry_failed_streams_task", **every(5.0)},
    "sweep-streams": {"task": f"{PIPELINE}.sweep_streams_task", **every(CDC_SWEEP_SECONDS)},
    "sweep-reports": {"task": "cdcweb.reports.tasks.sweep_reports_task", **every(CDC_SWEEP_SECONDS)},
    "sample-lag": {"task": f"{PIPELINE}.sample_lag_task", **every(CDC_LAG_SAMPLE_SECONDS)},
    "poll-watched-streams": {
        "task": "partitions.watch.tasks.poll_watched_streams_task",
        **every(CDC_WATCH_SECONDS),
    },
    "detect-stalls": {"task": f"{PIPELINE}.detect_stalls_task", **every(CDC_STALL_CHECK_SECONDS)},
    "cleanup-lag-samples": {"task": f"{PIPELINE}.cleanup_lag_samples_task", **every(3600.0)},
    "evaluate-alerts": {"task": f"{ALERTS}.evaluate_alerts_task", **every(CDC_ALERT_EVALUATE_SECONDS)},
    "purge-old-data": {"task": "cdcweb.retention.tasks.purge_old_data_task", **every(CDC_RETENTION_SECONDS)},
    # Yesterday's report per stream, once the day's last windows have surely landed.
    "daily-reports": {
        "task": "cdcweb.reports.tasks.schedule_daily_reports_task",
        "schedule": crontab(hour=0, minute=30),
        "options": {"expire_seconds": 3600},
    },
}

# Without collectstatic (the demo), WhiteNoise finds files in STATICFILES_DIRS directly.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every start without it

# --- Security ---------------------------------------------------------------------------
if CDC_BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = CDC_HTTPS
SECURE_HSTS_SECONDS = env_int("CDC_HSTS_SECONDS", 31_536_000) if CDC_HTTPS else 0
# Opt-in: they bind every subdomain, and the browsers' preload list, to HTTPS for good.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("CDC_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("CDC_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = [
    check
    for check, wanted in (
        ("security.W005", SECURE_HSTS_INCLUDE_SUBDOMAINS),
        ("security.W021", SECURE_HSTS_PRELOAD),
    )
    if not wanted
]
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_AGE = env_int("CDC_SESSION_SECONDS", 12 * 3600)

# Scripts and stylesheets only from static/: no inline script, <style> or style="" (django-csp;
# style attributes fall under style-src). The templates have none, and Plotly's strict build
# styles through the CSSOM (element.style), which a policy does not govern. The API docs page
# relaxes it for itself (cdcweb/urls.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-elem": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# API tokens (django-rest-knox): stored as SHA-512 digests, each expiring, revoked one by one.
CDC_TOKEN_DAYS = env_int("CDC_TOKEN_DAYS", 90)
# /metrics wants "Authorization: Bearer <this>" when set; unset, it is open (bind to loopback).
CDC_METRICS_TOKEN = env_str("CDC_METRICS_TOKEN", "")
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=CDC_TOKEN_DAYS) if CDC_TOKEN_DAYS > 0 else None,
    "AUTH_HEADER_PREFIX": "Token",
}

# Lockout of repeated failed logins (django-axes): a user name at one client address, and an
# address across every user name (cdcweb/lockout.py). The client address is the peer's, or
# behind CDC_BEHIND_TLS_PROXY the one the proxy appended to X-Forwarded-For, never the client's.
AXES_FAILURE_LIMIT = env_int("CDC_LOGIN_FAILURE_LIMIT", 5)
CDC_LOGIN_ADDRESS_FAILURE_LIMIT = env_int("CDC_LOGIN_ADDRESS_FAILURE_LIMIT", 20)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("CDC_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], ["ip_address"]]
AXES_HANDLER = "cdcweb.lockout.LockoutHandler"
AXES_CLIENT_IP_CALLABLE = "cdcweb.lockout.client_address"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
