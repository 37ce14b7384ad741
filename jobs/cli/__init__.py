"""The ``memstream`` command line: one module per command."""
