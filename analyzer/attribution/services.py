"""Write side of slowdown attribution (issue 6): train a model on the stored runs and store it as a version.

Used by ``manage.py train_attribution`` and the daily Celery beat task ``analyzer.tasks.train_attribution_task``.
The frame comes from ``analyzer.attribution.selectors``; the model from the Django-free ``analysis.attribution``.
A version's ``params``, ``features`` and ``confidence`` are checked against ``analyzer.attribution.schema`` before
it is written. After storing, versions beyond the newest ``HINDSIGHT_ATTRIBUTION_KEEP_VERSIONS`` are deleted, except
the one serving (a newer version that misses the MARE bar must not take the serving one away).
"""

from __future__ import annotations

import datetime as dt
import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import joblib  # type: ignore[import-untyped]
import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from analyzer.attribution import schema
from analyzer.attribution import selectors as attribution_selectors
from analyzer.models import AttributionModelVersion
from analyzer.stored_results import validated

# The least history worth a model: with fewer runs the held-out split (20%) is too small to judge its MARE.
DEFAULT_MIN_RUNS = 20
DEFAULT_MIN_TEMPLATES = 2


class TooFewRuns(ValueError):
    """Not enough stored history to train a model worth serving; the message says what is missing."""


@dataclass(frozen=True)
class Trained:
    version: AttributionModelVersion
    serving: bool
    pruned: int


def keep_versions() -> int:
    return max(1, int(settings.HINDSIGHT_ATTRIBUTION_KEEP_VERSIONS))


def attribution_train(
    *,
    days: int | None = None,
    min_runs: int = DEFAULT_MIN_RUNS,
    min_templates: int = DEFAULT_MIN_TEMPLATES,
    template_min_runs: int = 5,
    now: dt.datetime | None = None,
    progress: Callable[[str], None] | None = None,
) -> Trained:
    """Train on the runs that ended in the last ``days`` (None: the setting; 0: all) and store the version.

    ``min_runs`` / ``min_templates``: the least history to train on (TooFewRuns otherwise); ``template_min_runs``
    the runs a template needs for its own baseline (fewer: it borrows, as the library does).
    """
    from analysis.attribution import train

    step = progress or (lambda _name: None)
    if days is None:
        days = int(settings.HINDSIGHT_ATTRIBUTION_WINDOW_DAYS)
    step("frame")
    apps = attribution_selectors.training_apps(days=days, now=now)
    frame = attribution_selectors.runs_frame(apps)
    counts = frame["template"].value_counts() if len(frame) else None
    own = int((counts >= template_min_runs).sum()) if counts is not None else 0
    window = f"in the last {days} days" if days else "stored"
    if len(frame) < min_runs:
        raise TooFewRuns(
            f"Too few runs to train: {len(frame)} successful runs of recurring jobs {window}, {min_runs} needed."
        )
    if own < min_templates:
        raise TooFewRuns(
            f"Too few recurring templates to train: {own} template(s) with {template_min_runs} or more runs "
            f"{window}, {min_templates} needed."
        )
    bounds = attribution_selectors.window_bounds(apps)
    with warnings.catch_warnings():
        # numpy's "mean of empty slice" for a feature no run of the window has: the library reads it as absent.
        warnings.simplefilter("ignore", RuntimeWarning)
        model = train(frame, min_runs=template_min_runs, training_window=bounds, progress=step)
    step("store")
    buffer = io.BytesIO()
    joblib.dump(model, buffer, compress=3)
    blob = buffer.getvalue()
    summary = model.summary()
    mare = float(model.mare) if np.isfinite(model.mare) else float("inf")
    with transaction.atomic():
        version = AttributionModelVersion.objects.create(
            created_at=now or timezone.now(),
            format_version=int(summary["format_version"]),
            params=validated(summary["params"], schema.ForestParams),
            features=validated(summary["features"], list[str]),
            window_days=days or None,
            window_start=dt.datetime.fromisoformat(bounds[0]) if bounds else None,
            window_end=dt.datetime.fromisoformat(bounds[1]) if bounds else None,
            mare=mare,
            n_runs=len(frame),
            n_train=model.n_train,
            n_holdout=model.n_holdout,
            n_templates=model.n_templates,
            n_borrowed=int(model.baselines.borrowed.sum()),
            train_seconds=float(model.train_seconds),
            size_bytes=len(blob),
            confidence=validated(summary["confidence"], schema.ConfidenceThresholds),
            blob=blob,
        )
        pruned = prune()
    serving = attribution_selectors.serving_version()
    return Trained(version=version, serving=serving is not None and serving.pk == version.pk, pruned=pruned)


def prune(keep: int | None = None) -> int:
    """Delete all but the newest ``keep`` versions (the serving one always stays); returns how many went."""
    keep = keep_versions() if keep is None else keep
    newest = list(AttributionModelVersion.objects.order_by("-created_at", "-pk").values_list("pk", flat=True)[:keep])
    serving = attribution_selectors.serving_version()
    spare = set(newest) | ({serving.pk} if serving else set())
    deleted, _ = AttributionModelVersion.objects.exclude(pk__in=spare).delete()
    return int(deleted)
