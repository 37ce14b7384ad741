"""memstream jobs."""
