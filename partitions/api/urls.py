"""Routes of the partitions API (mounted under /api/v1/)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .views import PartitionViewSet, StreamPartitionViewSet

router = SimpleRouter()
router.register("partitions", PartitionViewSet, basename="partition")

urlpatterns = [
    path(
        "streams/<int:stream_pk>/partitions/",
        StreamPartitionViewSet.as_view({"get": "list"}),
        name="stream-partitions",
    ),
    *router.urls,
]
