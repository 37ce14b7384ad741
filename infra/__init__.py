"""memstream infra."""
