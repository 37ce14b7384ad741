"""memstream connectors."""
