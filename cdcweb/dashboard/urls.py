"""Page routes of the dashboard: the overview and a stream's page with its live parts and actions."""

from django.urls import include, path

from . import new_stream, views

urlpatterns = [
    path("", views.overview, name="overview"),
    path("streams/rows/", views.overview_rows, name="overview-rows"),
    path("streams/new/", new_stream.new_stream, name="stream-new"),
    path("streams/<int:pk>/", views.stream_detail, name="stream-detail"),
    path("streams/<int:pk>/panel/", views.stream_panel, name="stream-panel"),
    path("streams/<int:pk>/history/", views.stream_history, name="stream-history"),
    path("streams/<int:pk>/actions/<str:action>/", views.stream_action, name="stream-action"),
    path("streams/<int:pk>/backfill/", views.stream_backfill, name="stream-backfill"),
    path("", include("cdcweb.reports.urls")),
]
