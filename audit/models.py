"""The audit trail of staff actions and of reads of study data. Rows are written by
`audit.services` and never changed: the admin shows and exports them but cannot add, edit or
delete one, and each carries the hash of the one before it (audit.chain), so a change made
behind the site's back shows when `manage.py audit_verify` runs."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditEvent(models.Model):
    # Set before the row is saved (not auto_now_add), because the hash covers it.
    at = models.DateTimeField(default=timezone.now, db_index=True, editable=False)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=60, db_index=True)  # e.g. "run.paused"
    object_type = models.CharField(max_length=60, db_index=True)
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=300)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    note = models.CharField(max_length=500, blank=True)
    previous_hash = models.CharField(max_length=64, editable=False)
    hash = models.CharField(max_length=64, editable=False)

    class Meta:
        ordering = ["-at", "-pk"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.action} {self.object_repr}"


class AuditChainHead(models.Model):
    """The one row that holds the chain's last hash. Appending a record updates it first, which
    takes the row's lock on PostgreSQL and the write lock on SQLite, so two records written at
    once can never both follow the same hash."""

    last_hash = models.CharField(max_length=64)
    length = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.length} records, last {self.last_hash[:12]}"
