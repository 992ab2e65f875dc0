"""StackSelect project configuration: settings, URLs, Celery app."""

from config.celery import app as celery_app

__all__ = ["celery_app"]
