"""Routes of the token endpoints (mounted under /api/v1/)."""

from django.urls import path

from .api import RevokeView, TokenView

urlpatterns = [
    path("auth/token/", TokenView.as_view(), name="api-token"),
    path("auth/revoke/", RevokeView.as_view(), name="api-token-revoke"),
]
