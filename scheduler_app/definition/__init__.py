"""A schedule's definition: its stored fields read and validated into a timing and policies
(``schedule``), and the ways a timing is written as text (``text``). Below the services and
the beat, which both read it; above the engine (``timing``) and the rules it checks."""
