"""The per-schedule policies as pure decisions (no Django, no clock): misfire, overlap,
retry, lateness classes."""
