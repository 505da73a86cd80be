"""Operations models: beat heartbeats, kill switches and their audit, tenant quotas."""

from __future__ import annotations
