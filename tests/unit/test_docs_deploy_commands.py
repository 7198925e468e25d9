"""The deploy commands the top-level README and the board READMEs give for a MicroPython board provision the
command link's key: a board without its key refuses every line of the link (``boards/mp_common/mp_app.py``
``link_auth``), so a deploy as documented must leave a board that takes commands."""
import os
import re

import pytest

from onboard.deploy.__main__ import build_parser

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ("README.md", "boards/pico_rp2040/README.md", "boards/nano_esp32/README.md")
MICROPYTHON_BOARDS = ("pico_rp2040", "nano_esp32")
# commands that deploy nothing to a board: a listing, a dry run, a log pull
NO_DEPLOY = ("--build-only", "--dry-run", "--pull-log", "--help")


def deploy_commands(page):
    with open(os.path.join(REPO, page), encoding="utf-8") as fh:
        text = fh.read()
    pattern = r"python -m onboard\.deploy (%s)\b[^`\n#]*" % "|".join(MICROPYTHON_BOARDS)
    return [m.group(0).strip() for m in re.finditer(pattern, text)]


@pytest.mark.parametrize("page", PAGES)
def test_documented_deploys_provision_the_link_key(page):
    commands = [c for c in deploy_commands(page) if not any(flag in c for flag in NO_DEPLOY)]
    assert commands, "%s shows no deploy command" % page
    parser = build_parser()
    for command in commands:
        args = parser.parse_args(command.split()[3:])
        assert args.link_key, "%s: %r deploys without --link-key: the board would refuse every line" % (page,
                                                                                                     command)
