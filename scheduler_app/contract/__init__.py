"""The specification's JSON contracts: ``schedule.v1`` (schedules) and ``occurrence.v1``.

See docs/contract.md. ``schedule.v1`` is written in two styles (``native`` and ``spec``, the
specification's own form) and read in either; ``occurrence.v1`` is export-only.
"""

from scheduler_app.contract.export import (
    Refusal,
    export_document,
    ordered_schedules,
    render_file,
    write_atomically,
)
from scheduler_app.contract.fields import CONTRACT, STYLES, Style
from scheduler_app.contract.occurrence import (
    OCCURRENCE_CONTRACT,
    STATUS_OF_STATE,
    occurrence_contract,
)
from scheduler_app.contract.parse import ContractError, parse_document, read_documents
from scheduler_app.contract.schedule import (
    ImportResult,
    export_all,
    export_file,
    import_text,
    plan_import,
)

__all__ = [
    "CONTRACT",
    "OCCURRENCE_CONTRACT",
    "STATUS_OF_STATE",
    "STYLES",
    "ContractError",
    "ImportResult",
    "Refusal",
    "Style",
    "export_all",
    "export_document",
    "export_file",
    "import_text",
    "occurrence_contract",
    "ordered_schedules",
    "parse_document",
    "plan_import",
    "read_documents",
    "render_file",
    "write_atomically",
]
