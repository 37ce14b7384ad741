"""A learned fact extractor: MiniLM fine-tuned as a token tagger with tag, negation and hedge heads.

``tagging`` reads the labelled dev-set files, aligns each gold object to a
token span and turns predicted spans back into typed triples (pure Python);
``model`` loads and runs the tagger; ``training`` fine-tunes it; ``scoring``
compares predicted triples with gold. torch and transformers are imported
inside functions, so importing this package is cheap.
"""
