"""Routes of the alerts API (mounted under /api/v1/): alerts, and their rules, channels and silences."""

from rest_framework.routers import SimpleRouter

from .views import AlertRuleViewSet, AlertViewSet, ChannelViewSet, SilenceViewSet

router = SimpleRouter()
# The API's route names start with "api-": the pages own "alert-list", "alert-detail" and so on.
router.register("alerts/rules", AlertRuleViewSet, basename="api-alert-rule")
router.register("alerts/channels", ChannelViewSet, basename="api-alert-channel")
router.register("alerts/silences", SilenceViewSet, basename="api-alert-silence")
router.register("alerts", AlertViewSet, basename="api-alert")

urlpatterns = router.urls
