"""Vocabularies of a selection: its lifecycle and the fate of each candidate stack."""

from django.db import models


class SelectionState(models.TextChoices):
    DRAFT = "draft", "Draft"
    CANDIDATES_READY = "candidates_ready", "Candidates ready"
    PLANNED = "planned", "Benchmark planned"
    ARCHIVED = "archived", "Archived"


class CandidateOutcome(models.TextChoices):
    KEPT = "kept", "Kept"
    DROPPED = "dropped", "Dropped"


class OperationalNeed(models.TextChoices):
    OPENAI_API = "openai_api", "OpenAI-compatible API"
    PROMETHEUS = "prometheus_metrics", "Prometheus metrics"
    KUBERNETES = "kubernetes", "Kubernetes deployment"
