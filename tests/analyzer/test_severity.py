"""Severity has one definition: the heuristics judge with it, the tables store its values, the pages read it back."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

import heuristics
from analyzer.models import AnalyzedApp, HeuristicResult, Severity


def test_the_stored_severity_is_the_heuristics_severity() -> None:
    assert Severity is heuristics.Severity


def test_the_severity_columns_offer_the_five_levels_with_their_labels() -> None:
    expected = [(0, "None"), (1, "Low"), (2, "Moderate"), (3, "Severe"), (4, "Critical")]
    for model in (AnalyzedApp, HeuristicResult):
        field = model._meta.get_field("severity")
        assert list(field.choices or []) == expected
        assert field.default == Severity.NONE


@pytest.mark.django_db
def test_the_one_definition_needs_no_migration() -> None:
    out = io.StringIO()
    call_command("makemigrations", "analyzer", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
