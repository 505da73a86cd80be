"""The idempotency key's unique constraint goes: every occurrence's id is derived from its key
(uuid5), so the primary key already makes a key belong to one row, and the hot row's insert
and each of its state changes no longer write a long text entry into a unique index
(docs/performance.md, "The hot rows' indexes"). On PostgreSQL the index of every partition is
dropped under a brief exclusive lock of the ledger; the reverse builds the index again (and
fails if rows made outside the package share a key)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('scheduler_app', '0017_event_target'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='occurrence',
            name='occ_key_unique',
        ),
    ]
