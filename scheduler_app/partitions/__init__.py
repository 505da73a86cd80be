"""The ledger's partitions (PostgreSQL, migration 0014; docs/partitions.md).

``ranges``: the date math (pure); ``ddl``: reading and creating partitions; ``retire``:
taking one out (keepers found before the ledger is locked) and dropping it with its attempts;
``maintain``: the beat's hourly "create ahead" under an advisory lock; ``drop``: retention by
whole partitions. On SQLite, or on a ledger not partitioned, every entry point does nothing.
"""
