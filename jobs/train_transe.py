"""Placeholder: being written."""


def command() -> None:
    """Not written yet."""
    raise NotImplementedError
