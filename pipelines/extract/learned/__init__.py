"""A learned fact extractor: a Flair sequence tagger over frozen MiniLM token embeddings.

``tagging`` reads the labelled dev-set files, aligns each gold object to a
token span and turns predicted tags back into typed triples (pure Python);
``model`` loads and runs the tagger; ``training`` trains it; ``scoring``
compares predicted triples with gold. Flair and torch are imported inside
functions, so importing this package is cheap.
"""
