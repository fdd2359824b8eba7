"""The base of API lists nested under one stream (/streams/{stream_pk}/...)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter
from rest_framework import mixins, viewsets

from streams.models import Stream

from .cache import CachedReadMixin

STREAM_PK = OpenApiParameter("stream_pk", int, OpenApiParameter.PATH, description="the stream's id")


class StreamChildViewSet(CachedReadMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Base of the lists nested under one stream (/streams/{stream_pk}/...)."""

    def get_stream(self) -> Stream:
        """Return the stream named in the URL, or answer 404."""
        if not hasattr(self, "_stream"):
            self._stream = get_object_or_404(Stream, pk=self.kwargs["stream_pk"])
        return self._stream

    def get_queryset(self):
        """Return the rows of the stream in the URL."""
        return super().get_queryset().filter(stream=self.get_stream())
