"""Whether a host names the machine it is read on, asked by the server (which broker and server
address to hand runners) and by the runner (whether it can reach what it was given)."""

from __future__ import annotations

import ipaddress


def is_loopback_host(host: str | None) -> bool:
    """True for localhost and loopback addresses (IPv6 in brackets too); False for any other
    name, which may resolve anywhere."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
