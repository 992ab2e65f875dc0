"""Which installed engine version a catalog release accepts: its release series.

A plan names a catalog release ("SGLang 0.5.23"); a runner's probe names what it has
("0.5.20", "llama-cpp-python 0.3.16", "4034 (3e0ba0e6)"). Patch releases of one series share
their flags and scheduler, so a release accepts any version of its series: the same
major.minor. llama.cpp numbers daily builds ("b10488"), none of which the catalog can list,
and llama-cpp-python bundles a build it does not report, so every llama.cpp build is one
series; the run's identity still records the exact version that ran. Newer llama-server builds
put their library version before the build ("0.5.0-dev (build 0, commit 0c1e57098)", from
`version: %s (build %d, commit %s)` in llama.cpp's common/build-info.cpp.in, as vendored by
llama-cpp-python 0.3.36): that is a llama.cpp build too, not release series 0.5.
"""

from __future__ import annotations

import re

BUILD_SERIES = "any build"
_BUILD = re.compile(r"^b?\d+(\s*\(.*\))?$")
_NAMED_BUILD = re.compile(r"\(build \d+, commit [^)]*\)$")
_BUNDLED_BUILD_PREFIX = "llama-cpp-python "
_RELEASE = re.compile(r"v?(\d+)(?:\.(\d+))?")


def version_series(version: str | None) -> str | None:
    """The series of a version: 0.5.23 -> 0.5, b10488 -> any build; None when none is named."""
    text = (version or "").strip()
    if not text:
        return None
    if _BUILD.match(text) or _NAMED_BUILD.search(text) or text.startswith(_BUNDLED_BUILD_PREFIX):
        return BUILD_SERIES
    match = _RELEASE.search(text)
    if match is None:
        return None
    major, minor = match.groups()
    return major if minor is None else f"{major}.{minor}"


def release_accepts(release_version: str | None, installed: str | None) -> bool:
    """True when the installed version is of the release's series (an unreadable one never is)."""
    wanted = version_series(release_version)
    return wanted is not None and wanted == version_series(installed)
