"""schemathesis against the whole OpenAPI schema, in-process through Django's WSGI app.

User operations carry alice's `Token`, runner operations the `Runner` credential of an Acme
runner. Two runs, both with every default check of schemathesis (no 5xx, documented status
codes, content types, headers and bodies, schema-violating requests refused, authentication
not ignored, undocumented methods answered 405, deleted objects gone):

- per operation (explicit examples and generated cases): path ids point at alice's real
  objects for two cases in three, so bodies and queries reach the code behind the lookup;
- stateful: chains of operations linked by the ids one answer gives the next (links that
  schemathesis infers from the schema), so a created object is read, changed and used.

One expectation is widened: a schema-valid request may be refused with 400, because the API
checks what JSON Schema does not say (that a slug names a catalog row, cross-field rules such
as done <= total, no NUL or 64-bit overflow inside free-form objects). Bounded for a 2-core
CI: a fixed number of examples, derandomized, no deadline.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.urls import Resolver404, resolve
from hypothesis import HealthCheck, Phase, assume, settings
from schemathesis.config._checks import PositiveDataAcceptanceConfig

from apps.accounts.services import api_token_create
from apps.audit.services import Actor
from config.wsgi import application
from tests.decisions.factories import make_approver
from tests.security.alice_world import AliceWorld, build_alice_world

RUNNER_API = "/api/runner/v1/"
EXAMPLES_PER_OPERATION = 8
STATEFUL_SCENARIOS = 25
STATEFUL_STEPS = 6
# Accepted answers to a schema-valid request (schemathesis' default, plus 400: see above).
VALID_BUT_REFUSED = ["2xx", "3xx", "400", "401", "403", "404", "409", "429"]
BOUNDED = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": list(HealthCheck),
}

# Loaded once at collection; the schema view reads no database.
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
schema.config.checks.positive_data_acceptance = PositiveDataAcceptanceConfig(
    expected_statuses=VALID_BUT_REFUSED
)


@pytest.fixture
def fuzz_world(transactional_db, alice, bob, acme) -> Iterator[dict[str, Any]]:
    """Alice's objects, her API token and her runner's credential."""
    world = build_alice_world(alice=alice, bob_approver=make_approver(bob, acme), acme=acme)
    _, token = api_token_create(actor=Actor.for_user(alice), user=alice, team=acme, name="fuzz")
    CREDENTIALS.update(user_auth=f"Token {token}", runner_auth=f"Runner {world.runner_credential}")
    yield {"ids": real_ids(world)}
    CREDENTIALS.clear()


def real_ids(world: AliceWorld) -> dict[str, str]:
    """Path template prefix -> the id of alice's (or the catalog's) object it names."""
    objects, catalog = world.objects, world.catalog_ids()
    pairs = {
        "/api/v1/selections/{id}": objects["selection"].pk,
        "/api/v1/selections/{selection_id}": objects["selection"].pk,
        "/api/v1/benchmarks/plans/{id}": objects["plan"].pk,
        "/api/v1/benchmarks/jobs/{id}": objects["job"].pk,
        "/api/v1/decisions/{id}": objects["record"].pk,
        "/api/v1/runners/{id}": objects["runner"].pk,
        "/api/v1/audit/events/{id}": objects["audit_event"].pk,
        "/api/runner/v1/attempts/{attempt_id}": objects["attempt"].pk,
        "/api/v1/catalog/releases/{id}": catalog["release"],
        "/api/v1/catalog/capabilities/{id}": catalog["cell"],
        "/api/v1/catalog/engines/{slug}": catalog["engine"],
        "/api/v1/catalog/backends/{slug}": catalog["backend"],
        "/api/v1/catalog/accelerators/{slug}": catalog["accelerator"],
        "/api/v1/catalog/models/{slug}": catalog["model"],
        "/api/v1/catalog/features/{key}": catalog["feature"],
    }
    return {prefix: str(value) for prefix, value in pairs.items()}


def aim_at_real_objects(case: Any, ids: dict[str, str]) -> None:
    """Replace the generated path ids for two cases in three (a stable choice per case)."""
    if not case.path_parameters or zlib.crc32(repr(case.path_parameters).encode()) % 3 == 0:
        return
    for prefix, value in ids.items():
        if case.operation.path.startswith(prefix):
            name = prefix.rsplit("{", 1)[1].rstrip("}")
            case.path_parameters = {**case.path_parameters, name: value}


def routed(path: str) -> bool:
    """A generated id the URL map refuses (`AAA` for an integer) reaches no operation at all:
    Django answers its plain 404 page, which the API schema does not describe."""
    try:
        resolve(path)
    except Resolver404:
        return False
    return True


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, phases=[Phase.explicit, Phase.generate], **BOUNDED)
def test_every_operation_answers_without_5xx_and_as_documented(case, fuzz_world):
    aim_at_real_objects(case, fuzz_world["ids"])
    assume(routed(case.formatted_path))
    case.call_and_validate()


# The credentials of the running test; filled by `fuzz_world`, read by the auth provider.
CREDENTIALS: dict[str, str] = {}


@schemathesis.auth(refresh_interval=None)
class AliceCredentials:
    """Alice's token on user operations, her runner's credential on runner operations.

    Given to schemathesis as its auth provider (not as fixed headers), so its checks that
    missing or wrong credentials are refused can take the credential away.
    """

    def get(self, case: Any, ctx: Any) -> str | None:
        """None while collecting (no test world yet): schemathesis then sets nothing."""
        runner = case.operation.path.startswith(RUNNER_API)
        return CREDENTIALS.get("runner_auth" if runner else "user_auth")

    def set(self, case: Any, data: str, ctx: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": data}


@pytest.mark.slow
def test_chains_of_linked_operations_answer_without_5xx_and_as_documented(fuzz_world):
    links = schema.as_state_machine()

    assert links.bundles, "schemathesis inferred no links between the operations"
    links.run(
        settings=settings(
            max_examples=STATEFUL_SCENARIOS, stateful_step_count=STATEFUL_STEPS, **BOUNDED
        )
    )
