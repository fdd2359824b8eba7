"""Routes of the reports API (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from .api import ReportViewSet

router = SimpleRouter()
router.register("reports", ReportViewSet, basename="report")

urlpatterns = router.urls
