"""The sink job: memory operations applied to Redis, Chroma and Neo4j."""
