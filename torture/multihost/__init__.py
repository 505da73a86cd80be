"""The multi-host harness (``make test-multihost``): several beats and Celery workers on hosts
made of Linux network namespaces, PgBouncer in transaction mode between them and PostgreSQL,
PostgreSQL restarted and a beat killed under load, then the ledger checked slot by slot.

It reuses the torture harness's servers, processes, workload and checker (``torture``); what
is new here is the network (``netns``), the pooler (``pgbouncer``), the probes of what stays
correct behind a transaction-mode pooler (``probes``), the hosts' harness (``hosts``) and the
run itself (``run``, its workload and ledger in ``ledger``).
"""
