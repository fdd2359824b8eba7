"""/api/v1/: the API's root, a link to each of its resources (as DRF's DefaultRouter gives)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

# Each app's API router mounts its resources under /api/v1/ (cdcweb/urls.py). Paths, not
# URL names: the pages reuse names such as "report-list".
RESOURCES = {
    "streams": "streams/",
    "partitions": "partitions/",
    "reports": "reports/",
    "token": "auth/token/",
}
PAGES = {"schema": "api-schema", "docs": "api-docs"}


class ApiRootView(APIView):
    """The API's resources by name, as absolute links."""

    @extend_schema(exclude=True)
    def get(self, request):
        """Return {resource: link} for every resource of the API, its schema and its docs page."""
        root = request.build_absolute_uri(request.path)
        links = {name: root + path for name, path in RESOURCES.items()}
        links.update({name: reverse(url, request=request) for name, url in PAGES.items()})
        return Response(links)
