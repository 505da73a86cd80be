"""The ledger's partitions (PostgreSQL, migration 0014; docs/partitions.md).

``ranges``: the date math (pure); ``ddl``: reading, creating and retiring partitions;
``maintain``: the beat's hourly "create ahead" under an advisory lock; ``drop``: retention by
whole partitions. On SQLite, or on a ledger not partitioned, every entry point does nothing.
"""
