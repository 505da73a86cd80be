"""The reliability ("torture") harness: real beats, workers, PostgreSQL and Redis under faults.

Run ``make torture`` (long profile) or ``make torture-ci`` (the short profile CI runs); see
docs/reliability.md. Not part of the library: nothing in ``scheduler_app`` imports it.
"""
