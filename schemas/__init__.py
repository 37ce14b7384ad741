"""Message contracts of memstream: pydantic v2 models and their JSON Schemas."""
