"""Training the project's own models from the data it ships."""
