"""Page routes of partitions: a stream's table and tree, and one partition's page."""

from django.urls import path

from . import views

urlpatterns = [
    path("streams/<int:pk>/partitions/", views.stream_partitions, name="stream-partitions"),
    path("streams/<int:pk>/tree/", views.stream_tree, name="stream-tree"),
    path("partitions/<int:pk>/", views.partition_detail, name="partition-detail"),
    path("partitions/<int:pk>/children/", views.partition_children, name="partition-children"),
    path("partitions/<int:pk>/actions/<str:action>/", views.partition_action, name="partition-action"),
]
