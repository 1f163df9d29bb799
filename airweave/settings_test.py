"""Settings for the test suite: the same as production settings, with tasks run inline."""
from airweave.settings import *  # noqa: F401,F403
from airweave.settings import CACHES as _CACHES
from airweave.settings import Q_CLUSTER

Q_CLUSTER = {**Q_CLUSTER, "sync": True}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Nothing is cached between tests; the workers' heartbeats stay where a worker process writes them.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"},
          **{alias: _CACHES[alias] for alias in ("django_q",) if alias in _CACHES}}

import os  # noqa: E402

from airweave.settings import DATABASES  # noqa: E402

# Lets two test runs share one server without sharing a database.
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("AIRWEAVE_TEST_DB_NAME", "test_airweave")}

# In-process events by default; tests about crossing processes pick Redis or PostgreSQL themselves.
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
