"""Hindsight's analysis core.

``analyzer.appmodel`` is the Django-free model of one application attempt: the floor every other layer
stands on. ``analyzer.pipeline`` runs heuristics and metrics over it; ``analyzer.services`` persists the
result through the ORM in ``analyzer.models``.
"""
