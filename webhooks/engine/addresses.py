"""Which addresses a webhook may be sent to. A researcher types the URL and the workers POST to
it from inside the site's network, so a URL naming the site itself, a database beside it or a
cloud's metadata service (which hands out credentials) would let a researcher reach what the
network keeps from them. Those addresses are refused unless the site says otherwise (a lab on
a private network, the tests, the demo)."""

from __future__ import annotations

import ipaddress

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Clouds' instance metadata services that are not already link-local (169.254.169.254 is).
METADATA = {
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
}
SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT, private in all but name


def address_refusal(text: str) -> str:
    """Why a webhook may not be sent to the address `text`, or "" when it may."""
    address: IpAddress = ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if address in METADATA:
        return f"{address} is a cloud metadata address"
    kinds = (
        ("a loopback address", address.is_loopback),
        ("a link-local address (where metadata services answer)", address.is_link_local),
        ("the unspecified address", address.is_unspecified),
        ("a multicast address", address.is_multicast),
        ("a private address", address.is_private or address in SHARED),
        ("a reserved address", address.is_reserved),
    )
    kind = next((name for name, matches in kinds if matches), "")
    return f"{address} is {kind}" if kind else ""
