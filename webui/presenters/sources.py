"""The Sources page and ``/api/v1/clusters`` in words: each source's state as one word and its parameters as text.

The facts come from ``analyzer.selectors.sources`` (``sources_overview``); this module decides how they read, the
same on the page and in the API's answer. Secrets stay the selector's job: a secret parameter arrives by name only,
and every parameter's text is masked again by ``mask_source_secrets`` once it is written (a URL's ``user:pass@``,
a secret value inside another parameter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyzer.models import Source
from analyzer.selectors import sources as source_selectors
from analyzer.selectors.sources import ClusterSources, SourceParam, SourceStatus
from appmodel.formatting import json_text
from appmodel.redaction import MASK


def source_state(status: SourceStatus) -> str:
    """One word for the source, shown as text beside any colour: disabled, error, never polled, ok."""
    if not status.source.enabled:
        return "disabled"
    if status.last_error:
        return "error"
    if status.source.last_success_at is None:
        return "never polled"
    return "ok"


def param_text(value: Any) -> str:
    """A source parameter's value as one line: a list's items joined by ", ", a bool as "yes"/"no", anything else
    as its JSON text (a string as it is)."""
    items = value if isinstance(value, list) else [value]
    return ", ".join(json_text(v) if not isinstance(v, bool) else ("yes" if v else "no") for v in items)


def _shown(params: list[SourceParam], source: Source) -> list[tuple[str, str]]:
    return [
        (param.name, MASK if param.secret else source_selectors.mask_source_secrets(param_text(param.value), source))
        for param in params
    ]


def source_params_shown(source: Source) -> list[tuple[str, str]]:
    """A source's parameters as they may be shown, by name: secrets masked, as ``source_describe`` does."""
    return _shown(source_selectors.source_params(source), source)


def status_params_shown(status: SourceStatus) -> list[tuple[str, str]]:
    """:func:`source_params_shown` of the source of ``status``, from the parameters the overview already read."""
    return _shown(status.params, status.source)


@dataclass(frozen=True, slots=True)
class SourceCard:
    """One source on the Sources page: its facts, its state in a word and its parameters as text."""

    status: SourceStatus
    state: str
    params: list[tuple[str, str]]  # by name, secrets masked


@dataclass(frozen=True, slots=True)
class ClusterCard:
    name: str
    cluster_id: int
    sources: list[SourceCard]


def sources_page(overview: list[ClusterSources]) -> list[ClusterCard]:
    """The Sources page's clusters, each source with its state and parameters as the page writes them."""
    return [
        ClusterCard(
            name=cluster.name,
            cluster_id=cluster.cluster_id,
            sources=[SourceCard(s, source_state(s), status_params_shown(s)) for s in cluster.sources],
        )
        for cluster in overview
    ]
