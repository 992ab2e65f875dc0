"""The team members page costs the same queries for many members and invitations as for one."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from apps.accounts.choices import Role
from apps.accounts.models import Membership
from apps.accounts.services import api_token_create, invitation_create
from apps.audit.services import Actor
from tests.query_budget import page_queries, queries_before_and_after

pytestmark = pytest.mark.django_db


def _members_and_invitations(alice, acme, first: int, count: int) -> None:
    for n in range(first, first + count):
        user = get_user_model().objects.create_user(f"member-{n}")
        Membership.objects.create(user=user, team=acme, role=Role.ENGINEER)
        invitee = f"new-{n}@example.com"
        invitation_create(actor_user=alice, team=acme, invitee=invitee, role="viewer")


def test_the_members_page_reads_as_many_queries_for_many_members_as_for_one(
    alice_client, alice, acme
):
    _members_and_invitations(alice, acme, 0, 1)

    one, many = queries_before_and_after(
        lambda: page_queries(alice_client, "accounts:members"),
        lambda: _members_and_invitations(alice, acme, 1, 20),
    )
    assert acme.memberships.count() == 22 and acme.invitations.count() == 21
    assert many == one


def test_the_profile_page_reads_as_many_queries_for_many_api_tokens_as_for_one(
    alice_client, alice, acme
):
    def tokens(count: int) -> None:
        for n in range(count):
            api_token_create(actor=Actor.for_user(alice), user=alice, team=acme, name=f"ci-{n}")

    tokens(1)
    one, many = queries_before_and_after(
        lambda: page_queries(alice_client, "accounts:profile"), lambda: tokens(15)
    )
    assert many == one
