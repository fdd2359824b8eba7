"""Routes of the streams API (mounted under /api/v1/): kebab-case plural resources."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .views import (
    StreamAuditViewSet,
    StreamErrorViewSet,
    StreamOperationViewSet,
    StreamTransitionViewSet,
    StreamViewSet,
)

router = SimpleRouter()
router.register("streams", StreamViewSet, basename="stream")

urlpatterns = [
    *router.urls,
    path(
        "streams/<int:stream_pk>/transitions/",
        StreamTransitionViewSet.as_view({"get": "list"}),
        name="stream-transitions",
    ),
    path("streams/<int:stream_pk>/audit/", StreamAuditViewSet.as_view({"get": "list"}), name="stream-audit"),
    path(
        "streams/<int:stream_pk>/errors/", StreamErrorViewSet.as_view({"get": "list"}), name="stream-errors"
    ),
    path(
        "streams/<int:stream_pk>/operations/",
        StreamOperationViewSet.as_view({"get": "list"}),
        name="stream-operations",
    ),
    path(
        "streams/<int:stream_pk>/operations/<int:pk>/",
        StreamOperationViewSet.as_view({"get": "retrieve"}),
        name="stream-operation-detail",
    ),
]
