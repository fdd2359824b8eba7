"""Page routes of reports."""

from django.urls import path

from . import views as report_views

urlpatterns = [
    path("reports/", report_views.report_list, name="report-list"),
    path("reports/rows/", report_views.report_rows, name="report-rows"),
    path("reports/new/", report_views.report_new, name="report-new"),
    path("reports/<int:pk>/", report_views.report_detail, name="report-detail"),
    path("reports/<int:pk>/status/", report_views.report_status, name="report-status"),
    path("reports/<int:pk>/<slug:table>.csv", report_views.report_csv, name="report-csv"),
]
