"""PySpark report jobs over the landing zone. Nothing here imports Django."""
