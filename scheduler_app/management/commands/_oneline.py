"""Commands that report a bad argument on one line and exit 2 (argparse prints a usage block)."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandError, CommandParser


def bad_argument(message: str) -> CommandError:
    """A bad argument's error, on one line (exit 2)."""
    return CommandError(" ".join(message.splitlines()), returncode=2)


class OneLineErrors(BaseCommand):
    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.error = self._reject_arguments  # type: ignore[method-assign]
        return parser

    def _reject_arguments(self, message: str) -> NoReturn:
        error = CommandError(f"{message}; run with --help for usage", returncode=2)
        if not getattr(self, "_called_from_command_line", False):
            raise error
        self.stderr.write(f"CommandError: {error}")
        sys.exit(error.returncode)
