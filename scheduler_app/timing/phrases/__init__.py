"""English schedule phrases ("every weekday at 9:00 in Europe/Riga") to structured rules.

A deterministic reader of a small grammar (see ``grammar.py``): no model, no network, no
guessing. It returns the structured rule (``ParsedText``: kind, rule, zone, anchor, window);
the text itself is never stored as the rule. Anything it cannot read raises ``PhraseError``
naming the part.

    >>> parse_text("every weekday at 9:00 in Europe/Riga").rule
    '0 9 * * MON-FRI'
"""

from scheduler_app.timing.phrases.compose import MAX_TEXT_LENGTH, ParsedText, parse_text
from scheduler_app.timing.phrases.words import PhraseError

__all__ = ["MAX_TEXT_LENGTH", "ParsedText", "PhraseError", "parse_text"]
