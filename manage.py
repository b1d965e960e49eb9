#!/usr/bin/env python
"""Django's command-line entry point: `python manage.py analyze PATH`, `runserver`, `migrate`..."""

import os
import sys


def main() -> None:
    # The local default (config/settings/__init__.py); a deployment sets config.settings.production.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if sys.argv[1:2] == ["analyze"]:
        # The start-up fast path (issue 15, docs/DECISIONS.md): `analyze` reads local files, so it runs before
        # django.setup() and sets up only what it uses: nothing for --help, logging for --no-store, all of Django
        # when it stores. The same Command class, parser, output and exit codes as the path below.
        # One BLAS thread, unless the environment says otherwise: numpy's OpenBLAS starts a thread per core when it
        # loads (40-50 ms of CPU, up to 0.2 s of wall time on a busy machine), and this command's matrices are small
        # (the robust PCA already runs on one thread: analysis/stages/rpca.py).
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        from analyzer.management.commands.analyze import Command

        Command().run_from_argv(sys.argv)
        return
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
