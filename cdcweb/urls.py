"""URL routes of cdcweb."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from cdcweb import ops

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("streams.api.urls")),
    path("api/v1/", include("partitions.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("metrics", ops.metrics, name="metrics"),
    path("healthz", ops.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("streams.urls")),
    path("", include("partitions.urls")),
]
