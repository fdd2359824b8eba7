"""A URL conf with one view that fails, for the logging tests."""

from django.urls import path


def fail(request):
    raise RuntimeError("the disk is full\nsecond line of the message")


urlpatterns = [path("fail/", fail)]
