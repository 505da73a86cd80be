"""CSV cells a spreadsheet would run as formulas are neutralised (OWASP's rule), and every CSV
the package writes goes through the one helper that does it."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from scheduler_app.safety.spreadsheet import csv_writer, safe_cell

PACKAGE = Path(__file__).resolve().parents[2] / "scheduler_app"
HELPER = PACKAGE / "safety" / "spreadsheet.py"


@pytest.mark.parametrize(
    ("typed", "written"),
    [
        ('=HYPERLINK("https://evil.example","x")', '\'=HYPERLINK("https://evil.example","x")'),
        ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("\tplain", "'\tplain"),
        (" =1+1", "' =1+1"),
        ("\n=1+1", "'\n=1+1"),
        ("\u00a0=1+1", "'\u00a0=1+1"),
        ("  @SUM(A1)", "'  @SUM(A1)"),
        ("  spaced out", "  spaced out"),
        ("bucket migration", "bucket migration"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_a_text_cell_that_starts_a_formula_is_prefixed_with_a_quote(
    typed: str, written: str
) -> None:
    assert safe_cell(typed) == written


@pytest.mark.parametrize("value", [-5, 3.5, None, True])
def test_numbers_and_nulls_are_written_as_they_are(value: object) -> None:
    assert safe_cell(value) is value


def test_the_writer_neutralises_header_and_rows_and_reads_back() -> None:
    buffer = io.StringIO()
    writer = csv_writer(buffer, ["reason", "-version"], lineterminator="\n")
    writer.writeheader()
    writer.writerows([{"reason": "=1+1", "-version": -1}])
    assert list(csv.reader(io.StringIO(buffer.getvalue()))) == [
        ["reason", "'-version"],
        ["'=1+1", "-1"],
    ]


def test_every_csv_the_package_writes_goes_through_the_helper() -> None:
    writers = re.compile(r"csv\.(writer|DictWriter)\b")
    found = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path != HELPER and writers.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []
