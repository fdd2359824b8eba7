"""The Spanner change stream kind: reads with ``partitions.changestream`` (pure, no Django)."""
