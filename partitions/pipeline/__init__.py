"""The reading pipeline: Celery tasks, and the services they call to read a partition window by window.

tasks (thin) -> services / starting -> window (read, land, checkpoint) -> checkpoint,
lineage, leases, scheduling, failures; readers keeps each stream's connected Source;
landing writes the landing zone; lag_samples is beat's sampling of the progress read model.
"""
