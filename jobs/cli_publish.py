"""Placeholder: being written."""


def publish() -> None:
    """Not written yet."""
    raise NotImplementedError
