"""Placeholder: being written."""


def run() -> None:
    """Not written yet."""
    raise NotImplementedError
