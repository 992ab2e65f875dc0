"""Login throttling (django-axes) through the real login form: wrong passwords lock the
account and the address, the right password included, with a page that says why."""

from __future__ import annotations

from django.contrib.auth import authenticate
from django.test import Client

from tests.conftest import PASSWORD

LOGIN = "/accounts/login/"


def _login(username: str, password: str, address: str = "10.2.0.1"):
    return Client().post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


def test_five_wrong_passwords_lock_the_account_even_from_another_address(alice):
    assert all(_login("alice", "wrong").status_code == 200 for _ in range(4))
    locked = _login("alice", "wrong")
    assert locked.status_code == 429
    refused = _login("alice", PASSWORD, address="10.2.0.99")
    assert refused.status_code == 429
    assert "Too many failed logins" in refused.content.decode()
    assert int(refused["Retry-After"]) == 15 * 60


def test_wrong_passwords_for_many_accounts_lock_the_address(alice):
    for name in ("mallory", "trent", "victor", "walter", "zoe"):
        _login(name, "guess", address="10.2.0.5")
    assert _login("alice", PASSWORD, address="10.2.0.5").status_code == 429
    assert _login("alice", PASSWORD, address="10.2.0.6").status_code == 302


def test_a_success_resets_the_accounts_count(alice):
    for _ in range(4):
        _login("alice", "wrong", address="10.2.0.7")
    assert _login("alice", PASSWORD, address="10.2.0.7").status_code == 302
    for _ in range(4):
        _login("alice", "wrong", address="10.2.0.8")
    assert _login("alice", PASSWORD, address="10.2.0.8").status_code == 302


def test_authentication_without_a_request_still_works_for_commands(alice):
    assert authenticate(username="alice", password=PASSWORD) == alice
