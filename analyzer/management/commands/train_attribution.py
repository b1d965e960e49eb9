"""``manage.py train_attribution [--days N] [--min-runs N] [--min-templates N] [--quiet]``: train and store a
slowdown-attribution model (issue 6) on the stored runs of recurring jobs.

Prints the stored version's held-out MARE (Griffin Eq. 11), its run and template counts, the training time and
whether it serves (its MARE passes ``HINDSIGHT_ATTRIBUTION_MAX_MARE``). Exit status: 0 stored; 1 too few runs or
templates to train (nothing stored; the message says what is missing). ``--days 0`` trains on every stored run.
The daily Celery beat task ``analyzer.tasks.train_attribution_task`` does the same.
"""

from __future__ import annotations

from typing import Any, Final

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from analyzer.attribution import selectors as attribution_selectors
from analyzer.attribution.services import DEFAULT_MIN_RUNS, DEFAULT_MIN_TEMPLATES, TooFewRuns, attribution_train
from appmodel.formatting import terminal_decimal_size

# The steps the service and the library report, in order (analysis.attribution.train's progress callback).
STEPS: Final = ("frame", "baselines", "fit", "holdout", "calibrate", "done", "store")


class Command(BaseCommand):
    help = "Train a slowdown-attribution model on the stored runs of recurring jobs and store it as a version."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="Train on runs that ended in the last N days (default HINDSIGHT_ATTRIBUTION_WINDOW_DAYS, 30); "
            "0: every stored run.",
        )
        parser.add_argument(
            "--min-runs", type=int, default=DEFAULT_MIN_RUNS, help="Fewest runs to train on (default %(default)s)."
        )
        parser.add_argument(
            "--min-templates",
            type=int,
            default=DEFAULT_MIN_TEMPLATES,
            help="Fewest templates with 5 or more runs (default %(default)s).",
        )
        parser.add_argument("--quiet", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["days"]
        if days is not None and days < 0:
            raise CommandError("--days must be 0 (every run) or more")
        with tqdm(total=len(STEPS), desc="train_attribution", unit="step", disable=options["quiet"] or None) as bar:

            def step(name: str) -> None:
                bar.set_postfix_str(name)
                bar.update(1)

            try:
                trained = attribution_train(
                    days=days, min_runs=options["min_runs"], min_templates=options["min_templates"], progress=step
                )
            except TooFewRuns as error:
                bar.close()
                self.stderr.write(f"hindsight: {error}")
                raise SystemExit(1) from None
        v = trained.version
        bar_text = f"{attribution_selectors.max_mare():.2f}"
        self.stdout.write(
            f"Stored attribution model version {v.pk}: held-out MARE {v.mare:.3f}, {v.n_runs} runs "
            f"({v.n_train} trained, {v.n_holdout} held out), {v.n_templates} templates "
            f"({v.n_borrowed} borrowing a baseline), trained in {v.train_seconds:.1f} s, "
            f"{terminal_decimal_size(v.size_bytes)}."
        )
        if trained.serving:
            self.stdout.write(f"It serves: its MARE passes the bar of {bar_text} (HINDSIGHT_ATTRIBUTION_MAX_MARE).")
        else:
            self.stdout.write(
                f"It does not serve: its MARE is above the bar of {bar_text} (HINDSIGHT_ATTRIBUTION_MAX_MARE)."
            )
        if trained.pruned:
            self.stdout.write(f"Pruned {trained.pruned} older version(s).")
