"""Vocabularies of a selection: its lifecycle and the fate of each candidate stack."""

from django.db import models


class SelectionState(models.TextChoices):
    DRAFT = "draft", "Draft"
    CANDIDATES_READY = "candidates_ready", "Candidates ready"
    PLANNED = "planned", "Benchmark planned"
    ARCHIVED = "archived", "Archived"


class ComputeState(models.TextChoices):
    """Where the background computation of a selection's candidates stands."""

    IDLE = "idle", "Not requested"
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Computing"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class CandidateOutcome(models.TextChoices):
    KEPT = "kept", "Kept"
    DROPPED = "dropped", "Dropped"


class OperationalNeed(models.TextChoices):
    OPENAI_API = "openai_api", "OpenAI-compatible API"
    PROMETHEUS = "prometheus_metrics", "Prometheus metrics"
    KUBERNETES = "kubernetes", "Kubernetes deployment"
