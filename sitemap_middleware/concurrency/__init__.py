"""Concurrency: deadlines on provider progress, single-flight renders, worker threads for the
ASGI adapter and helper threads for the WSGI one."""
