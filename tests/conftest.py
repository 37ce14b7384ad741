"""Shared by unit and integration tests: pytest puts this folder on sys.path.

So modules here (``sample_memory``) import by their own name from any test; a
``tests`` package some dependency installs into site-packages shadows the
``tests.`` prefix.
"""
