"""The user API's view of the fleet (/api/v1/runners/): read-only, team-scoped."""

from __future__ import annotations

from rest_framework import serializers, viewsets
from stackselect_domain.attempts import LEASED_STATES

from apps.accounts.permissions import TeamRolePermission
from apps.core.request_context import request_team
from apps.runners.models import Runner
from apps.runners.selectors import runner_state, runners_of


class RunnerSerializer(serializers.ModelSerializer):
    state = serializers.SerializerMethodField()

    class Meta:
        model = Runner
        fields = [
            "id",
            "name",
            "state",
            "labels",
            "gpu_count",
            "engines",
            "simulated",
            "probe",
            "enrolled_at",
            "rotated_at",
            "revoked_at",
            "last_heartbeat_at",
        ]

    def get_state(self, runner: Runner) -> str:
        return runner_state(runner, busy=runner.pk in self.context.get("busy_ids", set()))


class RunnerViewSet(viewsets.ReadOnlyModelViewSet):
    """The acting team's runners with their shown state (online, busy, offline, revoked)."""

    serializer_class = RunnerSerializer
    permission_classes = [TeamRolePermission]

    def get_queryset(self):
        return runners_of(team=request_team(self.request)).order_by("name", "id")

    def get_serializer_context(self):
        context = super().get_serializer_context()
        context["busy_ids"] = set(
            self.get_queryset()
            .filter(attempts__state__in=LEASED_STATES)
            .values_list("id", flat=True)
        )
        return context
