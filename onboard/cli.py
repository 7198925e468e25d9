"""The command lines' argument parser (host tools only: argparse is not on boards): an argument error is one line
on stderr, ``PROG: error: MESSAGE (see `PROG --help`)``, and exit status 2 -- no usage block. Subcommands'
parsers (``add_subparsers``) are of the same class. Used by ``python -m harness``, ``python -m onboard.deploy``
and the board services (``python -m boards.rpi``, ``python -m boards.wamv``)."""
import argparse

EXIT_BAD_INPUT = 2


class OneLineParser(argparse.ArgumentParser):
    """An argument error is one line on stderr (``prog: error: ...; see prog --help``), exit status 2."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, "%s: error: %s (see `%s --help`)\n" % (self.prog, message, self.prog))
