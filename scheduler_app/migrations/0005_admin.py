# Owned by one workstream; hand-written operations only (see docs/reference.md for the schema).
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("scheduler_app", "0004_reliability")]

    operations: list = []
