"""A kind's connection settings as API fields and form fields, built from its Setting declarations.

Each kind declares its settings once (partitions/sources/<kind>/); the API, its OpenAPI
schema, the create form and the CLI all derive theirs from that, and every value goes
through the kind's own clean() before it is stored in Stream.connection.
"""

from __future__ import annotations

from typing import Any

from django import forms
from rest_framework import serializers

from partitions.sources import KINDS
from partitions.sources.base import Setting, SettingsError


def api_field(setting: Setting, **extra) -> serializers.Field:
    """Return the DRF field of one setting (the kind's clean() checks its value afterwards)."""
    common = {"required": setting.required, "help_text": setting.help, "label": setting.label, **extra}
    if not setting.required:
        common["default"] = setting.default if setting.default is not None else ""
    if setting.type == "int":
        return serializers.IntegerField(**common)
    if setting.type == "bool":
        return serializers.BooleanField(**common)
    if setting.type == "list":
        if not setting.required:
            common["default"] = list(setting.default or ())
        return serializers.ListField(child=serializers.CharField(max_length=200), max_length=1000, **common)
    if setting.type == "choice":
        return serializers.ChoiceField(
            choices=list(setting.choices), allow_blank="" in setting.choices, **common
        )
    return serializers.CharField(max_length=300, allow_blank=not setting.required, **common)


def form_field(setting: Setting) -> forms.Field:
    """Return the form field of one setting (a list is typed comma separated)."""
    common = {"required": setting.required, "help_text": setting.help, "label": setting.label}
    if setting.type == "int":
        return forms.IntegerField(initial=setting.default, **common)
    if setting.type == "bool":
        return forms.BooleanField(initial=setting.default, **{**common, "required": False})
    if setting.type == "choice":
        choices = [(c, c or "(detect)") for c in setting.choices]
        return forms.ChoiceField(choices=choices, initial=setting.default, **common)
    initial = ", ".join(map(str, setting.default or ())) if setting.type == "list" else setting.default
    return forms.CharField(max_length=300, initial=initial or "", **common)


def clean_settings(kind_name: str, values: dict[str, Any]) -> dict[str, Any]:
    """Return the kind's cleaned settings, or raise SettingsError naming each bad one
    (or source_kind, for a kind whose streams cannot be created yet)."""
    kind = KINDS[kind_name]
    if kind.unavailable:
        raise SettingsError({"source_kind": kind.unavailable})
    names = {setting.name for setting in kind.settings}
    return kind.clean({name: value for name, value in values.items() if name in names})


def frozen_changes(kind_name: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Return the settings that cannot change once a stream has started but would (missing = default)."""

    def value(settings: dict[str, Any], setting: Setting):
        found = settings.get(setting.name, setting.default if setting.default is not None else "")
        return list(found) if isinstance(found, list | tuple) else found

    return [
        s.name
        for s in KINDS[kind_name].settings
        if not s.editable and s.name in after and value(after, s) != value(before, s)
    ]


__all__ = ["SettingsError", "api_field", "clean_settings", "form_field", "frozen_changes"]
