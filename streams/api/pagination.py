"""Page-number pagination for every list of the API."""

from __future__ import annotations

from rest_framework import pagination


class PageNumberPagination(pagination.PageNumberPagination):
    """Pages of 50 by default; ?page_size= up to 500 (a page of 500 partitions is about 250 KB)."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
