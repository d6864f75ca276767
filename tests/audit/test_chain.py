"""The audit trail is a hash chain: every record carries the hash of the one before it, and
`audit_verify` names the first record changed, removed or forged behind the site's back."""

import importlib
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command

from audit.chain import GENESIS, HASHED_FIELDS, first_break, record_hash
from audit.models import AuditChainHead, AuditEvent
from audit.services import audit_chain_break, audit_record

pytestmark = pytest.mark.django_db


def three_records(actor):
    return [
        audit_record(actor=actor, action=f"test.step{n}", target=actor, after={"n": n, "x": 0.5})
        for n in range(3)
    ]


def verify_output() -> str:
    out = StringIO()
    call_command("audit_verify", stdout=out)
    return out.getvalue()


def test_each_record_follows_the_hash_of_the_one_before(admin_user):
    first, second, third = three_records(admin_user)
    assert second.previous_hash == first.hash and third.previous_hash == second.hash
    assert AuditChainHead.objects.get().last_hash == third.hash
    assert "The audit chain holds" in verify_output()


def test_a_changed_record_is_named(admin_user):
    _, second, _ = three_records(admin_user)
    AuditEvent.objects.filter(pk=second.pk).update(note="edited in the database")
    with pytest.raises(CommandError, match=f"breaks at record {second.pk}: its content"):
        call_command("audit_verify")


def test_a_removed_record_is_found_at_the_one_after_it(admin_user):
    _, second, third = three_records(admin_user)
    AuditEvent.objects.filter(pk=second.pk).delete()
    broken = audit_chain_break()
    assert broken.record_id == third.pk and "previous hash" in broken.reason


def test_a_record_removed_from_the_end_breaks_the_chain(admin_user):
    _, second, third = three_records(admin_user)
    AuditEvent.objects.filter(pk=third.pk).delete()
    assert audit_chain_break().record_id == second.pk


def test_a_record_forged_with_its_own_hash_still_breaks_the_chain(admin_user):
    first, second, _ = three_records(admin_user)
    forged = {name: getattr(second, name) for name in HASHED_FIELDS} | {"note": "forged"}
    AuditEvent.objects.filter(pk=second.pk).update(
        note="forged", hash=record_hash(first.hash, forged)
    )
    assert audit_chain_break().record_id > second.pk  # the next one no longer follows


def test_the_hash_reads_json_keys_in_any_order():
    fields = dict.fromkeys(HASHED_FIELDS, "") | {"before": {"a": 1, "b": 2}, "after": {}}
    reordered = fields | {"before": {"b": 2, "a": 1}}
    assert record_hash(GENESIS, fields) == record_hash(GENESIS, reordered)


def test_an_empty_trail_holds():
    assert first_break([], GENESIS) is None


def test_records_without_the_chain_head_are_a_break(admin_user):
    *_, last = three_records(admin_user)
    AuditChainHead.objects.all().delete()
    assert audit_chain_break().record_id == last.pk


def test_the_migration_chains_the_records_written_before_the_chain(admin_user):
    migration = importlib.import_module("audit.migrations.0002_hash_chain")
    records = three_records(admin_user)
    AuditEvent.objects.update(previous_hash="", hash="")
    AuditChainHead.objects.all().delete()
    migration.chain_existing_records(apps, None)
    assert audit_chain_break() is None
    chained = AuditEvent.objects.order_by("pk")
    assert [event.hash for event in chained] == [event.hash for event in records]


@pytest.mark.django_db(transaction=True)
def test_records_written_at_once_from_several_threads_never_fork_the_chain(admin_user):
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    def write(n: int) -> None:
        try:
            for step in range(8):
                audit_record(actor=None, action=f"test.thread{n}", target=None, note=str(step))
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(write, range(4)))
    assert AuditEvent.objects.count() == 32
    assert audit_chain_break() is None
    assert AuditChainHead.objects.get().length == 32
