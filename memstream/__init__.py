"""memstream: settings and version."""
