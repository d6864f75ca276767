#!/usr/bin/env python
"""Django's command-line utility; configuration errors print one clear line, not a traceback."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.env import SettingsError

    try:
        from django.core.management import execute_from_command_line

        execute_from_command_line(sys.argv)
    except SettingsError as error:
        sys.stderr.write(f"Configuration error: {error}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
