"""Page routes of alerts: alert-rule-new, alert-channel-edit, alert-silence-delete and so on."""

from django.urls import path

from . import views

urlpatterns = [
    path("alerts/", views.alert_list, name="alert-list"),
    path("alerts/rows/", views.alert_rows, name="alert-rows"),
    path("alerts/firing/", views.firing_panel, name="alert-firing"),
    path("alerts/<int:pk>/", views.alert_detail, name="alert-detail"),
    path("alerts/rules/", views.rule_list, name="alert-rules"),
    path("alerts/channels/", views.channel_list, name="alert-channels"),
    path("alerts/silences/", views.silence_list, name="alert-silences"),
    path("alerts/silences/<int:pk>/expire/", views.silence_expire, name="alert-silence-expire"),
]
for what in views.EDITABLE:
    urlpatterns += [
        path(f"alerts/{what}s/new/", views.edit, {"what": what}, name=f"alert-{what}-new"),
        path(f"alerts/{what}s/<int:pk>/edit/", views.edit, {"what": what}, name=f"alert-{what}-edit"),
        path(f"alerts/{what}s/<int:pk>/delete/", views.delete, {"what": what}, name=f"alert-{what}-delete"),
    ]
