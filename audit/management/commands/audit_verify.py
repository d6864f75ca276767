"""`manage.py audit_verify`: recompute the audit trail's hash chain and name the first record
that does not follow from the ones before it (exit status 1), or say that it holds."""

from django.core.management.base import BaseCommand, CommandError

from audit.models import AuditEvent
from audit.services import audit_chain_break


class Command(BaseCommand):
    help = "Check the audit trail's hash chain; name the first broken record."

    def handle(self, *args, **options) -> None:
        broken = audit_chain_break()
        if broken is not None:
            raise CommandError(
                f"The audit chain breaks at record {broken.record_id}: {broken.reason}."
            )
        self.stdout.write(f"The audit chain holds ({AuditEvent.objects.count()} records).")
