"""Benchmarks. Not part of the pytest suite; run them with ``make bench-timing`` and friends.

Each benchmark prints a Markdown report, rewrites its own ``## `` section of
``docs/performance.md`` (see ``bench.report``) and writes ``bench/results/<name>.json``.
"""
