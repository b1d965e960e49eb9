"""Presentation: what the pages and the API show, shaped from the typed data the analyzer's selectors return.

Sentences, chart view-models and answer shapes live here (one module per topic), never in ``analyzer``: the
analyzer returns data, the web layer decides how people and CI read it.
"""
