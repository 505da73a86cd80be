"""The per-schedule policies as pure decisions (no Django, no clock): misfire, overlap, retry,
lateness classes; and the limits on what a schedule may hold (``limits``), which the models'
validators and constraints, and every entry point, check."""
