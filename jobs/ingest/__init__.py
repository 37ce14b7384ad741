"""The ingest jobs: the Faust worker and the PyFlink job over the same stages."""
