from rest_framework import serializers

from apps.decisions.choices import DEFAULT_REVALIDATE_AFTER_DAYS, TriggerKind
from apps.decisions.evidence_kind import EvidenceKind
from apps.decisions.models import DecisionRecord, RetestTrigger
from apps.decisions.services import MAX_REVALIDATE_DAYS


class TriggerSerializer(serializers.ModelSerializer):
    class Meta:
        model = RetestTrigger
        fields = [
            "id",
            "kind",
            "reason",
            "changed_field",
            "detail",
            "fired_at",
            "acknowledged_at",
            "plan",
            "plan_note",
        ]


class _RecordBase(serializers.ModelSerializer):
    reference = serializers.CharField(read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    proposed_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    decided_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    supersedes = serializers.SlugRelatedField(slug_field="number", read_only=True, allow_null=True)
    superseded_by = serializers.SlugRelatedField(
        slug_field="number", read_only=True, allow_null=True
    )
    evidence_kind = serializers.ChoiceField(
        choices=EvidenceKind.choices,
        read_only=True,
        help_text="What the evidence is: measured, simulated, mixed, imported (or none).",
    )


SUMMARY_FIELDS = [
    "id",
    "reference",
    "number",
    "title",
    "status",
    "status_reason",
    "selection",
    "created_by",
    "created_at",
    "updated_at",
    "proposed_by",
    "proposed_at",
    "decided_by",
    "decided_at",
    "supersedes",
    "superseded_by",
    "retest_needed",
    "retest_needed_at",
    "evidence_kind",
    "simulation_only",
]


class RecordSummarySerializer(_RecordBase):
    """A list row: status and links, without the four parts."""

    class Meta:
        model = DecisionRecord
        fields = SUMMARY_FIELDS


class RecordSerializer(_RecordBase):
    """The whole record: goal, candidates, evidence, the decision and the fired triggers."""

    triggers = TriggerSerializer(many=True, read_only=True)

    class Meta:
        model = DecisionRecord
        fields = [
            *SUMMARY_FIELDS,
            "goal",
            "candidates",
            "evidence",
            "comparison",
            "chosen_key",
            "rationale",
            "dropped",
            "risks",
            "retest_kinds",
            "revalidate_after_days",
            "triggers",
        ]


class RecordTextIn(serializers.Serializer):
    """The author's text; candidates by their selection candidate id."""

    title = serializers.CharField(max_length=200)
    chosen_candidate_id = serializers.IntegerField(required=False, allow_null=True, default=None)
    rationale = serializers.CharField(required=False, allow_blank=True, default="")
    dropped = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        default=dict,
        help_text="{candidate id: why it was dropped}",
    )
    risks = serializers.CharField(required=False, allow_blank=True, default="")
    revalidate_after_days = serializers.IntegerField(
        min_value=1, max_value=MAX_REVALIDATE_DAYS, default=DEFAULT_REVALIDATE_AFTER_DAYS
    )
    retest_kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=TriggerKind.choices),
        required=False,
        default=list(TriggerKind.values),
    )


class RecordCreateIn(RecordTextIn):
    selection = serializers.IntegerField()
    candidates = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        default=list,
        help_text="Candidate ids to compare; empty takes the ones chosen for benchmarking.",
    )


class RecordUpdateIn(RecordTextIn):
    refresh = serializers.BooleanField(
        default=False, help_text="Re-read the goal, candidates and evidence from the selection."
    )


class ProposeIn(serializers.Serializer):
    simulation_only = serializers.BooleanField(
        default=False,
        help_text="Own up to evidence that is only simulated: without it, such a record "
        "cannot be accepted.",
    )


class ReasonIn(serializers.Serializer):
    reason = serializers.CharField()


class SupersedeIn(serializers.Serializer):
    title = serializers.CharField(required=False, allow_blank=True, default="")
