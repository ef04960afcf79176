"""README.md is also the package page (setup.py's long_description), where a relative link has no
repository to resolve against and breaks: every link in it is absolute, and a link into the
project's own site or repository starts with the URL setup.py declares for it
(buildsys/release_matrix.py's PROJECT_URLS)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from checkout import ROOT, from_checkout

README = ROOT / "README.md"

# Inline links and images [text](target "title"), reference definitions [label]: target, HTML
# href/src attributes and autolinks <scheme:...>; code spans and fenced code are removed first.
_INLINE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]*)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_HTML = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']*)["']""", re.I)
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]*:[^>\s]*)>")
_FENCED = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)


def link_targets(markdown: str) -> list[str]:
    """Every link target of a Markdown document, in order of appearance per kind."""
    text = _CODE_SPAN.sub("", _FENCED.sub("", markdown))
    return [m for pattern in (_INLINE, _REFERENCE, _HTML, _AUTOLINK) for m in pattern.findall(text)]


def link_problems(markdown: str, project_urls: dict[str, str]) -> list[str]:
    """Why each link would break on the package page or leave the declared URLs; empty when none."""
    problems = []
    bases = list(project_urls.values())
    hosts = {urlsplit(url).netloc.lower() for url in bases}
    for target in link_targets(markdown):
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            problems.append(f"{target!r} is not an absolute http(s) URL")
        elif parts.netloc.lower() in hosts and not any(
            target == b or target.startswith(b.rstrip("/") + "/") for b in bases
        ):
            problems.append(f"{target!r} points into the project but does not start with a URL setup.py declares")
    return problems


@pytest.fixture(scope="module")
def project_urls() -> dict[str, str]:
    return from_checkout("buildsys.release_matrix").PROJECT_URLS


def test_readme_links_are_absolute_and_use_the_declared_urls(project_urls):
    if not README.is_file():
        pytest.skip(
            reason=f"README.md is not beside tests/ ({README} not found): tests/ was copied without the checkout"
        )
    problems = link_problems(README.read_text(encoding="utf-8"), project_urls)
    assert not problems, "README.md is the package page, where these links break:\n" + "\n".join(problems)


def test_the_check_finds_each_kind_of_relative_link(project_urls):
    site, repo = project_urls["Documentation"], project_urls["Source"]
    page = (
        "[a page](docs/file-format.md) ![logo](img/logo.png) [an anchor](#install)\n"
        "[ref]: CONTRIBUTING.md\n"
        '<a href="LICENSE">license</a> [fine](https://numpy.org/) '
        f"[site]({site}user/install.html) [repo]({repo}/blob/main/LICENSE)\n"
        "[elsewhere on the host](https://github.com/someone-else/tinytensor)\n"
        "`[not a link](inside/code.md)`\n```\n[nor](this.md)\n```\n"
    )
    problems = link_problems(page, project_urls)
    flagged = sorted(p.split("'")[1] for p in problems)
    assert flagged == sorted(
        [
            "docs/file-format.md",
            "img/logo.png",
            "#install",
            "CONTRIBUTING.md",
            "LICENSE",
            "https://github.com/someone-else/tinytensor",
        ]
    )


def test_setup_declares_the_project_urls(project_urls):
    if not (ROOT / "setup.py").is_file():
        pytest.skip(reason="checks the repository's own setup.py: this is a wheel's test folder, without it")
    assert set(project_urls) == {"Documentation", "Source", "Changelog", "Issues"}
    assert all(urlsplit(url).scheme == "https" for url in project_urls.values())
    assert "project_urls=release_matrix.PROJECT_URLS" in (ROOT / "setup.py").read_text(encoding="utf-8")
