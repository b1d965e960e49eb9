"""``manage.py localize_stages [--template T] [--cluster NAME] [--all]``: which stage made a recurring job's runs slow.

Runs the stage anomaly localization (issue 7, ``analyzer.stages.services``) and stores one result per
(template, cluster). Without options: the templates with runs newer than their stored result and enough runs,
as the hourly Celery beat task ``analyzer.tasks.localize_stages_task`` does. ``--template`` / ``--all``: that
template, or every template, now, however few its runs (a category with too few runs says so).
``--cluster NAME`` narrows to one cluster (``--cluster ""``: apps read from files).

Prints per template: its categories (stage signatures) with their runs, run-time CV against alpha and whether
they were analysed, the anomalous stages, and one sentence per anomalous stage: its outlier runs and, where the
stage's tasks say (3 hosts or more), the hosts whose tasks were slow in each run or that it was slow on every
host. Exit status 0; 1 when ``--template`` names a template without a finished, successful run.
"""

from __future__ import annotations

import re
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from analyzer.stages.services import localize_all, localize_due
from webui.presenters.stages import localization_view


class Command(BaseCommand):
    help = "Find the stage that is the outlier in a recurring job's slow runs, and store the result per template."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--template", default="", help="Only this template, now, however few its runs.")
        parser.add_argument("--cluster", default=None, help='Only this cluster\'s apps ("" for apps read from files).')
        parser.add_argument(
            "--all", action="store_true", help="Every template with a successful run, not only those with new runs."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        template, cluster = options["template"], options["cluster"]
        if options["all"] or template or cluster is not None:
            stored = localize_all(template=template, cluster=cluster)
            if template and not stored:
                self.stderr.write(f"hindsight: no finished, successful run of template {_printable(template)!r}")
                raise SystemExit(1)
        else:
            stored = localize_due()
        if not stored:
            self.stdout.write(
                "Nothing to localize: no template has runs newer than its stored result and enough runs "
                "(--all computes every template now)."
            )
            return
        for row in stored:
            self._print(localization_view(row))
        anomalous = sum(1 for row in stored if row.n_anomalous)
        self.stdout.write(f"Localized {len(stored)} template(s); {anomalous} with an anomalous stage.")

    def _line(self, text: str) -> None:
        self.stdout.write(_printable(text))

    def _print(self, view: dict[str, Any]) -> None:
        where = f" on cluster {view['cluster']}" if view["cluster"] else ""
        self._line(f"{view['template']}{where}: {view['n_runs']} runs, {view['n_categories']} categories")
        if view["reason"]:
            self._line(f"  not analysed: {view['reason']}")
        for category in view["categories"]:
            state = "analysed" if category["analysed"] else f"not analysed: {category['reason']}"
            self._line(
                f"  category {category['signature'] or '(no stages)'}: {category['runs']} runs, "
                f"CV {category['cv']:.3f} (alpha {category['alpha']:g}), {state}"
            )
            for stage in category["anomalous_stages"]:
                self._line(f"    anomalous {stage['label']}: cosine {stage['cosine']:.3f}")
            for sentence in category["sentences"]:
                self._line(f"    {sentence[:1].upper()}{sentence[1:]}.")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _printable(text: str) -> str:
    # Stage names and templates come from clusters: no terminal escape sequences from them.
    return _CONTROL.sub("?", text)
