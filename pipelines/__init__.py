"""memstream pipelines."""
