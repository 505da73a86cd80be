"""A schedule.v1 document with a secret-looking payload key is refused by the plan, on the
document's own field, with nothing written (it used to pass the plan and fail at apply time
as a problem of the whole file)."""

from __future__ import annotations

import json

import pytest

from scheduler_app.contract import export_all, import_text
from scheduler_app.contract.parse import ContractError
from scheduler_app.models import Schedule
from scheduler_app.services import create_schedule

pytestmark = pytest.mark.django_db


def test_a_secret_in_a_documents_kwargs_is_refused_on_its_field() -> None:
    create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *", key="daily", kwargs={"n": 1})
    document = json.loads(export_all())
    document["schedules"][0]["target"]["kwargs"] = {"api_token": "abc"}
    with pytest.raises(ContractError) as refused:
        import_text(json.dumps(document), dry_run=True)
    assert "schedules[0].target.kwargs" in str(refused.value)
    assert "api_token_ref" in str(refused.value)
    assert Schedule.objects.get(key="daily").kwargs == {"n": 1}
