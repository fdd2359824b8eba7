"""URL routes of cdcweb."""

from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from . import ops
from .api_root import ApiRootView

# The docs page loads its script from its own URL (no inline script); Swagger UI styles
# its elements inline, so that page alone allows inline styles.
api_docs = csp_update({"style-src": ["'unsafe-inline'"], "style-src-elem": ["'unsafe-inline'"]})(
    login_required(SpectacularSwaggerSplitView.as_view(url_name="api-schema"))
)

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", ApiRootView.as_view(), name="api-root"),
    path("api/v1/", include("cdcweb.accounts.api_urls")),
    path("api/v1/", include("cdcweb.dashboard.api.urls")),
    path("api/v1/", include("cdcweb.reports.api_urls")),
    path("api/v1/", include("partitions.api.urls")),
    path("api/v1/", include("cdcweb.alerts.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", api_docs, name="api-docs"),
    path("metrics", ops.metrics, name="metrics"),
    path("healthz", ops.healthz, name="healthz"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("cdcweb.dashboard.urls")),
    path("", include("partitions.urls")),
    path("", include("cdcweb.alerts.urls")),
]
