"""Slowdown attribution (Griffin): models trained and stored (``services``), explanations read (``selectors``)."""
