"""The read-only REST API under /api/v1/ (Django REST framework), its OpenAPI schema and the CI gate endpoint.

It reads through ``analyzer.selectors`` like the pages do, and never fetches.
"""
