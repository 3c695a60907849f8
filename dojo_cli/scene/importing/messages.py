"""How the importers word their problems, warnings and notes: names listed and shortened."""

from __future__ import annotations


def listed(names: list[str], most: int = 8) -> str:
    """The first ``most`` names joined by commas, ", ..." when there are more; "none" for none."""
    shown = ", ".join(names[:most])
    return shown + (", ..." if len(names) > most else "") if names else "none"


def shortened(name: str, most: int = 60) -> str:
    """repr of a name for a message, cut short when long."""
    return repr(name) if len(name) <= most else f"{name[:most]!r}... ({len(name):,} characters)"


def recovery_time_text() -> str:
    """The time constant over which a step brings in a joint outside its range or a contact
    inside its surface (core maximal/recovery.h), as the importers' notes say it:
    "0.02 s (at least 2 steps)"."""
    from dojo_cli import _core

    return f"{_core.RECOVERY_TIME:g} s (at least {_core.RECOVERY_STEPS:g} steps)"
