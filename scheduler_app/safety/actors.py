"""Who acts: a person (a Django user) or the system (a command, the beat, decorator sync).

Every service takes ``user``: the acting person, or ``SYSTEM`` (``None`` means the same, for
callers written before actors had a name). A system actor passes the permission, tenant and
owner rules: it is the deployment itself (someone with shell access or the deployed code).
Surfaces that serve people (the admin, the contract views) always pass ``request.user``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SystemActor:
    """The deployment acting on its own; ``name`` says which surface (``"command"``, ...)."""

    name: str = "system"
    is_authenticated = False
    is_superuser = False
    is_active = True
    pk = None

    def get_username(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


SYSTEM = SystemActor()
COMMAND = SystemActor("command")
SYNC = SystemActor("code")


def is_system(user: Any) -> bool:
    """True for ``None`` and every ``SystemActor``: no person's rights are involved."""
    return user is None or isinstance(user, SystemActor)


def actor_name(user: Any) -> str:
    """What the audit trail records as *who*: the username, or the system actor's name."""
    if user is None:
        return SYSTEM.name
    return str(user.get_username())[:150]
