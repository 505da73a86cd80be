"""export_schedules / import_schedules as commands: exit codes, one-line errors, atomic files,
a bad stored row, progress bars, summaries that say what was done, --json."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, transaction

from scheduler_app.clock import FakeClock
from scheduler_app.contract import export_all
from scheduler_app.contract.cli import Progress
from scheduler_app.models import Schedule
from tests.conftest import using_postgres
from tests.integration.support import START, schedule

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(*args: str) -> CommandError:
    with pytest.raises(CommandError) as caught:
        run(*args)
    return caught.value


def three(clock: FakeClock | None = None) -> list[Schedule]:
    """Three schedules created a second apart (export order: creation)."""
    clock = clock or FakeClock(START)
    rows = []
    for minute in (0, 10, 20):
        clock.advance(timedelta(seconds=1))
        rows.append(schedule(clock, kind="cron", rule=f"{minute} 9 * * *", key=f"k{minute}"))
    return rows


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-o", "/nonexistent/dir/x.json"), "cannot write /nonexistent/dir/x.json: the directory"),
        (("-o", "."), "cannot write .: it is a directory"),
        (("--json",), "--json needs --output"),
        (("--style", "yaml"), "invalid choice: 'yaml'"),
    ],
)
def test_export_bad_arguments_are_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    error = refused("export_schedules", *args)
    assert message in str(error) and "\n" not in str(error)
    if not args[0].startswith("--style"):  # argparse's own errors: see the next test
        assert error.returncode == 2


def test_export_styles_and_the_json_summary(tmp_path: Path) -> None:
    three()
    out, _ = run("export_schedules", "--style", "spec")
    assert [d["schedule_id"] for d in json.loads(out)["schedules"]] == ["k0", "k10", "k20"]
    target = tmp_path / "s.json"
    out, err = run("export_schedules", "-o", str(target), "--json")
    assert json.loads(out) == {
        "exported": 3,
        "refused": [],
        "output": str(target),
        "style": "native",
    }
    assert target.read_text() == export_all() and err == ""
    _, err = run("export_schedules", "-o", str(target), "--style", "spec")
    assert err.strip() == f"exported 3 schedule(s) to {target} (spec style)"


def store_unwritable(row: Schedule) -> None:
    """What SQLite keeps and JSON in UTF-8 cannot write: a lone surrogate in the payload."""
    Schedule.objects.filter(pk=row.pk).update(kwargs={"note": "bad \ud800 text"})


def test_one_bad_row_does_not_stop_the_export_of_the_others(tmp_path: Path) -> None:
    _first, bad, _last = three()
    if using_postgres():  # PostgreSQL refuses to store it at all: the case cannot arise there
        with pytest.raises(DatabaseError), transaction.atomic():
            store_unwritable(bad)
        return
    store_unwritable(bad)
    target = tmp_path / "s.json"
    target.write_text("previous export\n")
    error = refused("export_schedules", "-o", str(target))
    assert error.returncode == 1
    assert "1 schedule(s) could not be exported" in str(error)
    exported = json.loads(target.read_text())["schedules"]
    assert [d["key"] for d in exported] == ["k0", "k20"]
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError):
        call_command("export_schedules", stdout=out, stderr=err)
    assert f"schedule {bad.pk}: not exported: it holds text that is not valid Unicode" in (
        err.getvalue()
    )
    assert [d["key"] for d in json.loads(out.getvalue())["schedules"]] == ["k0", "k20"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]  # no temporary file left


def test_a_failed_write_leaves_the_previous_file_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    three()
    target = tmp_path / "s.json"
    target.write_text("previous export\n")

    def broken(*args: Any, **kwargs: Any) -> Any:
        yield '{\n  "contract"'
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("scheduler_app.management.commands.export_schedules.render_file", broken)
    error = refused("export_schedules", "-o", str(target))
    assert error.returncode == 2 and "No space left on device" in str(error)
    assert target.read_text() == "previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_from_the_command_line_bad_arguments_exit_2_with_one_line() -> None:
    for args in (["-o", "/nonexistent/dir/x.json"], ["--style", "yaml"]):
        done = subprocess.run(
            [sys.executable, "manage.py", "export_schedules", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""
    assert done.stderr.splitlines()[-1].endswith(
        "invalid choice: 'yaml' (choose from 'native', 'spec')"
    )


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bars_on_a_terminal_for_long_runs_only() -> None:
    assert Progress(Terminal())("exporting", 10).disable is True  # done before it would draw
    assert Progress(Terminal())("exporting", 500).disable is False
    assert Progress(io.StringIO())("exporting", 500).disable is True
    assert Progress(io.StringIO(), enabled=True)("exporting", 5).disable is False
    assert Progress(Terminal(), enabled=False)("exporting", 500).disable is True


def test_forced_progress_bars_on_export_and_import(tmp_path: Path) -> None:
    three()
    target = tmp_path / "s.json"
    _, err = run("export_schedules", "-o", str(target), "--progress")
    assert "exporting: 100%" in err and "3/3" in err
    Schedule.objects.all().delete()
    _, err = run("import_schedules", str(target), "--progress")
    assert "checking: 100%" in err and "importing: 100%" in err
    _, err = run("import_schedules", str(target))
    assert err == ""


def test_import_summary_says_what_was_done_and_json(tmp_path: Path) -> None:
    three()
    source = tmp_path / "s.json"
    source.write_text(export_all())
    Schedule.objects.filter(key="k10").delete()
    out, _ = run("import_schedules", str(source), "--dry-run")
    assert (
        out.splitlines()[-1] == "1 to create, 0 to update, 2 unchanged (dry run: nothing written)"
    )
    out, _ = run("import_schedules", str(source))
    assert out.splitlines()[-1] == "created 1, updated 0, unchanged 2"
    assert out.splitlines()[1].startswith("created   schedules[1]")
    out, _ = run("import_schedules", str(source), "--json")
    result = json.loads(out)
    assert (result["applied"], result["created"], result["unchanged"]) == (True, 0, 3)
    assert [c["key"] for c in result["changes"]] == ["k0", "k10", "k20"]


def test_import_json_errors_and_exit_2(tmp_path: Path) -> None:
    source = tmp_path / "bad.json"
    source.write_text(json.dumps([{"target": {"task": "demo.ping"}, "timing": {"kind": "cron"}}]))
    out = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("import_schedules", str(source), "--json", stdout=out, stderr=io.StringIO())
    assert caught.value.returncode == 2
    body = json.loads(out.getvalue())
    assert body["applied"] is False
    assert body["problems"] == [
        {"document": "schedules[0]", "path": "timing.rule", "message": "required"}
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read {path}: no such file"),
        (b"\xff\xfe[]", "cannot read {path}: not UTF-8 text (byte 0); save it as UTF-8"),
        ("dir", "cannot read {path}: it is a directory"),
    ],
)
def test_import_unreadable_files_exit_2(tmp_path: Path, content: Any, message: str) -> None:
    path = tmp_path / "in.json"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    error = refused("import_schedules", str(path))
    assert error.returncode == 2 and str(error) == message.format(path=path)


def test_import_check_version_refuses_a_stale_document(tmp_path: Path) -> None:
    clock = FakeClock(START)
    three(clock)
    source = tmp_path / "s.json"
    source.write_text(export_all())
    call_command("import_schedules", str(source), "--check-version", stdout=io.StringIO())
    row = Schedule.objects.get(key="k0")
    from scheduler_app.services import update_schedule

    update_schedule(row.pk, expected_version=1, clock=clock, rule="5 9 * * *")
    error = refused("import_schedules", str(source), "--check-version")
    assert error.returncode == 2
    assert Schedule.objects.get(key="k0").rule == "5 9 * * *"


def test_a_long_import_lists_50_documents_unless_asked(tmp_path: Path) -> None:
    docs = [
        {
            "key": f"bulk{i}",
            "target": {"task": "demo.ping"},
            "timing": {"kind": "cron", "rule": f"{i % 60} 9 * * *"},
        }
        for i in range(60)
    ]
    source = tmp_path / "bulk.json"
    source.write_text(json.dumps(docs))
    out, _ = run("import_schedules", str(source))
    lines = out.splitlines()
    assert len(lines) == 52 and lines[-2] == "... and 10 more (-v 2 lists every document)"
    assert lines[-1] == "created 60, updated 0, unchanged 0"
    out, _ = run("import_schedules", str(source), "-v", "2")
    assert len(out.splitlines()) == 61
    out, _ = run("import_schedules", str(source), "-v", "0")
    assert out.splitlines() == ["created 0, updated 0, unchanged 60"]
