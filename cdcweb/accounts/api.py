"""Token endpoints: trade a user name and password for a token, and revoke the token in use.

Both are throttled per client address (the "auth" scope, CDC_AUTH_THROTTLE_RATE), and a
password check goes through authenticate() with the request, so django-axes locks out
repeated failures here as on the login form.
"""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema, inline_serializer
from knox.views import LogoutView
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from cdcweb.auth import TokenAuthentication
from cdcweb.lockout import AddressRateThrottle
from streams.access import NO_ROLE, can_view
from streams.api.permissions import HasRole

from . import tokens


class CredentialsSerializer(serializers.Serializer):
    """A user name and password."""

    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=1024, trim_whitespace=False, style={"input_type": "password"})


TOKEN_ANSWER = inline_serializer(
    "IssuedToken",
    {
        "token": serializers.CharField(help_text="send as 'Authorization: Token <token>'; shown only now"),
        "expiry": serializers.DateTimeField(allow_null=True),
    },
)


class TokenView(APIView):
    """Issue a new API token for a user name and password (valid CDC_TOKEN_DAYS days)."""

    authentication_classes = ()
    permission_classes = (AllowAny,)
    throttle_classes = (AddressRateThrottle,)
    throttle_scope = "auth"

    @extend_schema(request=CredentialsSerializer, responses={200: TOKEN_ANSWER}, auth=[])
    def post(self, request):
        """Return a new token; 400 for wrong credentials, 403 once locked out or for a user in no role."""
        credentials = CredentialsSerializer(data=request.data)
        credentials.is_valid(raise_exception=True)
        user = authenticate(request._request, **credentials.validated_data)
        if user is None:
            raise exceptions.ValidationError({"non_field_errors": ["wrong user name or password"]})
        if not can_view(user):
            raise exceptions.PermissionDenied(NO_ROLE)  # a token it could use for nothing
        token, text = tokens.issue(user, tokens.default_lifetime())
        expiry = serializers.DateTimeField().to_representation(token.expiry) if token.expiry else None
        return Response({"token": text, "expiry": expiry}, status=status.HTTP_200_OK)


class RevokeView(LogoutView):
    """Revoke the token this request was made with (knox's logout)."""

    authentication_classes = (TokenAuthentication,)
    permission_classes = (HasRole,)
    throttle_classes = (AddressRateThrottle,)
    throttle_scope = "auth"

    @extend_schema(request=None, responses={204: None})
    def post(self, request, format=None):
        """Delete the token in the Authorization header; 204."""
        return super().post(request, format)
