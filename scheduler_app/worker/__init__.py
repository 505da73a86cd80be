"""The worker side's database statements, kept few: on PostgreSQL a scheduled delivery costs
one statement to claim its occurrence and one to record the outcome (``sql``); other databases
take the ORM path in ``scheduler_app.worker.lifecycle``, with the same results."""
