"""Server-rendered pages over the stored analyses. No models, no fetching: it only reads and shows."""
