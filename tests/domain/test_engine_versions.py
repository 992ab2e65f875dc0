"""A catalog release accepts the installed versions of its series (major.minor), and every
llama.cpp build; an unreadable version is never accepted."""

from __future__ import annotations

import pytest
from stackselect_domain.engine_versions import BUILD_SERIES, release_accepts, version_series


@pytest.mark.parametrize(
    ("version", "series"),
    [
        ("0.5.23", "0.5"),
        ("0.33.0", "0.33"),
        ("v3.3.7", "3.3"),
        ("0.3.13.post1", "0.3"),
        ("1.2.1rc2", "1.2"),
        ("b10488", BUILD_SERIES),
        ("4034 (3e0ba0e6)", BUILD_SERIES),
        # What llama-server from llama-cpp-python 0.3.36's llama.cpp prints (`make` builds it).
        ("0.5.0-dev (build 0, commit 0c1e57098)", BUILD_SERIES),
        ("llama-cpp-python 0.3.36", BUILD_SERIES),
        ("", None),
        ("unknown", None),
    ],
)
def test_the_series_of_a_version_is_its_major_minor_or_any_llama_cpp_build(version, series):
    assert version_series(version) == series


def test_a_release_accepts_its_own_series_only():
    assert release_accepts("0.5.23", "0.5.20")
    assert not release_accepts("0.5.23", "0.4.9")
    assert not release_accepts("0.33.0", "0.3.3")
    assert release_accepts("b10488", "llama-cpp-python 0.3.36")
    assert release_accepts("b10488", "0.5.0-dev (build 0, commit 0c1e57098)")
    assert not release_accepts("0.5.23", "0.5.0-dev (build 0, commit 0c1e57098)")
    assert not release_accepts("0.5.23", None)
    assert not release_accepts("", "0.5.23")
