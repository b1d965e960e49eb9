"""The stage signature: a short digest of the shape of an app's stage DAG (issue 7, stage anomaly localization).

Runs of one template with one signature form a *category* of :func:`analysis.stages.localize.localize`: their
stage columns (keyed by stage id) mean the same stages, so their durations can be compared run by run.

Definition. The signature is the first 16 hex digits of the SHA-256 of the app kind (``SPARK``/``MAPREDUCE``)
and the sorted list of ``(stage id, normalized name)``, one pair per stage id, the name taken from the stage's
first (lowest) attempt. Spark names a stage after its call site (``count at Foo.scala:42``, ``collect at
/path/job.py:17``), which is the same in every run of the same code. The normalized name keeps the operation and
the file's base name and drops:

* the directory of the file (``/tmp/spark-1234/job.py`` and ``/opt/jobs/job.py`` are one driver script: a
  spark-submit may copy it anywhere), and the line number (an edit that moves code without changing the DAG must
  not start a new category; the stage ids still tell stages apart);
* hex runs of 8 or more and digit runs of 6 or more (generated ids, timestamps some names embed);
* extra whitespace.

What does not change it: retries and attempt numbers (one pair per stage id); whether a stage was skipped (a
skipped stage is part of the DAG the driver built: it is in its job's stage list and keeps its id, its output
was merely reused); stage status, durations and task counts. What changes it: a stage more or less, another
operation or another file at a stage id (a different DAG). A run that failed before submitting its later jobs has
fewer stages and so another signature. Jobs submitted concurrently from several driver threads may number their
stages in either order; such runs split into categories, which is safe (fewer runs compared, never wrong stages).

MapReduce jobs have a map phase (stage 0) and, unless map-only, a reduce phase (stage 1): two signatures per
template at most. An app without stages has the signature ``""``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Final, Protocol

SIGNATURE_HEX_DIGITS: Final = 16

_CALL_SITE = re.compile(r"^(?P<op>.*?)\s+at\s+(?P<where>\S.*?)(?::\d+)?$", re.DOTALL)
_LONG_HEX = re.compile(r"(?<![0-9A-Za-z])(?=[0-9a-fA-F]*[0-9])[0-9a-fA-F]{8,}(?![0-9A-Za-z])")
_LONG_DIGITS = re.compile(r"\d{6,}")
_SPACES = re.compile(r"\s+")


class StageLike(Protocol):
    """What the signature reads of a stage: a report's ``StageRow``, a stored ``StageSummary``, an app's stage."""

    @property
    def stage_id(self) -> int: ...

    @property
    def attempt_id(self) -> int: ...

    @property
    def name(self) -> str: ...


def normalize_stage_name(name: str) -> str:
    """A stage name without what varies between runs of the same code (see the module docstring)."""
    text = _SPACES.sub(" ", str(name or "")).strip()
    match = _CALL_SITE.match(text)
    if match:
        where = re.split(r"[/\\]", match["where"])[-1]
        text = f"{match['op']} at {where}"
    text = _LONG_HEX.sub("#", text)
    return _LONG_DIGITS.sub("#", text)


def stage_signature(stages: Iterable[StageLike], *, app_type: str = "SPARK") -> str:
    """The signature of an app whose stages (every attempt, any order) are ``stages``; "" when there is none."""
    first: dict[int, tuple[int, str]] = {}
    for stage in stages:
        stage_id, attempt = int(stage.stage_id), int(stage.attempt_id)
        if stage_id not in first or attempt < first[stage_id][0]:
            first[stage_id] = (attempt, normalize_stage_name(stage.name))
    if not first:
        return ""
    shape = [str(app_type).upper(), [[stage_id, first[stage_id][1]] for stage_id in sorted(first)]]
    digest = hashlib.sha256(json.dumps(shape, ensure_ascii=True, separators=(",", ":")).encode())
    return digest.hexdigest()[:SIGNATURE_HEX_DIGITS]
