"""Django settings of the beats and workers on the test hosts: the torture harness's, with the
database reached through PgBouncer in transaction mode and the settings that stay correct
there (docs/deployment.md, "Behind PgBouncer")."""

import copy
import os

from torture.settings import *  # noqa: F403

# A copy: the star import shares the dict with the settings module it came from (in the test
# process, the live settings), which the changes below must never reach.
DATABASES = copy.deepcopy(DATABASES)  # noqa: F405

# QuerySet.iterator() outside a transaction declares a WITH HOLD cursor that lives on one
# server connection; the pooler may send the next FETCH to another one (probes.hold_cursor).
# (MULTIHOST_SERVER_SIDE_CURSORS=1 turns them back on: the harness shows an export failing.)
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = (
    os.environ.get("MULTIHOST_SERVER_SIDE_CURSORS") != "1"
)
# Django 5.2's default, written out: psycopg prepares nothing, so no statement name can
# meet a server connection that lacks it (PgBouncer < 1.21 does not track them).
DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = None
