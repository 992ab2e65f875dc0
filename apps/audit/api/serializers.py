from rest_framework import serializers

from apps.audit.models import AuditEvent


class AuditEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "occurred_at",
            "actor_type",
            "actor_id",
            "actor_name",
            "team",
            "request_id",
            "action",
            "object_type",
            "object_id",
            "object_repr",
            "before",
            "after",
            "message",
            "prev_hash",
            "hash",
        ]
