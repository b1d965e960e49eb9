"""Stage anomaly localization (CloudDiag) of recurring templates: localized, stored and read back."""
