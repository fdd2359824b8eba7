"""Spark reports on the Django side: the spark-submit command, its output, its result tables.

The Spark jobs themselves live in ``spark_tasks/`` (no Django); ``streams.report_services``
joins these helpers with the ORM and ``streams.tasks`` runs them from Celery.
"""
