"""Staff-only curation pages. Forms validate input; the services write and audit it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from apps.audit.services import Actor
from apps.catalog import selectors, services
from apps.catalog.forms import (
    AcceleratorForm,
    CapabilityForm,
    CopyForwardForm,
    EngineForm,
    EngineReleaseForm,
    FeatureForm,
    ModelSpecForm,
)
from apps.catalog.models import (
    Accelerator,
    Capability,
    Engine,
    EngineRelease,
    Feature,
    ModelSpec,
)


def staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed-in staff only; anyone else signed in gets 403, not a login loop."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied("Only catalog curators (staff) change the catalog.")
        return view(request, *args, **kwargs)

    return wrapped


@dataclass(frozen=True)
class EntryKind:
    """A kind of catalog row editable through the generic edit page (URL segment -> parts)."""

    model: type[models.Model]
    form: type[forms.ModelForm]
    lookup: str
    detail_url: str

    def url_of(self, instance: models.Model) -> str:
        return reverse(self.detail_url, args=[getattr(instance, self.lookup)])


ENTRY_KINDS: dict[str, EntryKind] = {
    "engines": EntryKind(Engine, EngineForm, "slug", "catalog:engine"),
    "releases": EntryKind(EngineRelease, EngineReleaseForm, "pk", "catalog:release"),
    "accelerators": EntryKind(Accelerator, AcceleratorForm, "slug", "catalog:accelerator"),
    "models": EntryKind(ModelSpec, ModelSpecForm, "slug", "catalog:model"),
    "features": EntryKind(Feature, FeatureForm, "key", "catalog:feature"),
    "capabilities": EntryKind(Capability, CapabilityForm, "pk", "catalog:capability"),
}


def _entry_kind(kind: str) -> EntryKind:
    if kind not in ENTRY_KINDS:
        raise PermissionDenied(f"{kind!r} is not an editable catalog kind.")
    return ENTRY_KINDS[kind]


def add_service_errors(form: forms.BaseForm, error: ValidationError) -> None:
    if not hasattr(error, "error_dict"):
        form.add_error(None, error.messages)
        return
    for field, field_errors in error.message_dict.items():
        form.add_error(field if field in form.fields else None, field_errors)


def _save(request: HttpRequest, form: forms.ModelForm, kind: EntryKind) -> models.Model:
    """Create or update through the services; the form only validated the input."""
    actor = Actor.for_user(request.user)
    if form.instance.pk is None:
        return services.entry_create(actor=actor, model=kind.model, values=form.cleaned_data)
    changes = {name: form.cleaned_data[name] for name in form.changed_data}
    return services.entry_update(actor=actor, instance=form.instance, changes=changes)


def _edit_page(
    request: HttpRequest, kind: EntryKind, instance: models.Model | None, initial: dict
) -> HttpResponse:
    form = kind.form(request.POST or None, instance=instance, initial=initial)
    if instance is not None and kind.model is Capability:
        for name in ("release", "feature"):
            form.fields[name].disabled = True
    if request.method == "POST" and form.is_valid():
        try:
            saved = _save(request, form, kind)
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Saved {saved}.")
            return redirect(kind.url_of(saved))
    context = {
        "form": form,
        "instance": instance,
        "verbose_name": kind.model._meta.verbose_name,
        "cancel_url": kind.url_of(instance) if instance else reverse("catalog:matrix"),
        "history": selectors.entry_history(instance) if instance else [],
    }
    return render(request, "catalog/entry_form.html", context)


@staff_required
def entry_edit(request: HttpRequest, kind: str, ident: str) -> HttpResponse:
    entry_kind = _entry_kind(kind)
    try:
        meta = entry_kind.model._meta
        lookup_field = meta.pk if entry_kind.lookup == "pk" else meta.get_field(entry_kind.lookup)
        value = lookup_field.to_python(ident)
    except ValidationError as error:
        raise Http404(f"No {entry_kind.model._meta.verbose_name} {ident!r}.") from error
    instance = get_object_or_404(entry_kind.model, **{entry_kind.lookup: value})
    return _edit_page(request, entry_kind, instance, initial={})


@staff_required
def entry_create(request: HttpRequest, kind: str) -> HttpResponse:
    """A blank form; query parameters (release, feature...) pre-fill it."""
    entry_kind = _entry_kind(kind)
    initial = {
        name: value for name, value in request.GET.items() if name in entry_kind.form.base_fields
    }
    if entry_kind.model is Capability:
        initial.setdefault("verified_by", request.user.get_username())
    return _edit_page(request, entry_kind, None, initial=initial)


@staff_required
def release_copy_forward(request: HttpRequest, pk: int) -> HttpResponse:
    previous = get_object_or_404(EngineRelease.objects.select_related("engine"), pk=pk)
    form = CopyForwardForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            release = services.release_start_from_previous(
                actor=Actor.for_user(request.user), previous=previous, **form.cleaned_data
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Started {release}: its cells are copies marked for review.")
            return redirect("catalog:release", pk=release.pk)
    context = {"form": form, "previous": previous}
    return render(request, "catalog/copy_forward.html", context)
