"""Content-Security-Policy: every page forbids inline code, and no template relies on any."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

TEMPLATES = Path(settings.BASE_DIR) / "templates"
INLINE = {
    "inline script": re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I),
    "inline style element": re.compile(r"<style\b", re.I),
    "style attribute": re.compile(r"\sstyle=", re.I),
    "event handler attribute": re.compile(r"\son[a-z]+=", re.I),
}


def _directives(header: str) -> dict[str, list[str]]:
    return {name: values for name, *values in (part.split() for part in header.split(";") if part.strip())}


@pytest.mark.parametrize("path", ["/login/", "/", "/reports/"])
def test_pages_allow_scripts_and_styles_from_this_site_only(client, users, path):
    if path != "/login/":
        client.force_login(users["operator"])
    response = client.get(path)
    assert response.status_code == 200
    policy = _directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == policy["style-src-elem"] == ["'self'"]
    assert "style-src-attr" not in policy  # so style="" falls under style-src: refused
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]


@pytest.mark.parametrize(
    "template", sorted(TEMPLATES.rglob("*.html")), ids=lambda p: str(p.relative_to(TEMPLATES))
)
def test_no_template_has_inline_code(template):
    text = template.read_text()
    found = [what for what, pattern in INLINE.items() if pattern.search(text)]
    assert found == [], f"{template.name}: {found} would be refused by the Content-Security-Policy"
