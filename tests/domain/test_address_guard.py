"""The SSRF address guard over every address form that could hide a non-public host: pure,
no network (numeric host names go through getaddrinfo with AI_NUMERICHOST only)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence

import pytest

from beliefs.domain.webhooks import (
    Destination,
    UnsafeDestination,
    check_destination,
    is_public,
    non_public_reason,
)

REFUSED = [
    # The forms the security review found accepted (Python calls them global).
    "::ffff:0:7f00:1",  # IPv4-translated 127.0.0.1
    "::7f00:1",  # IPv4-compatible 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata address
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "fec0::1",  # site-local
    # IPv4-mapped, of every kind of non-public IPv4 address
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:100.64.0.1",
    "::ffff:0.0.0.0",
    "::ffff:224.0.0.1",
    # IPv4-translated and IPv4-compatible, even of a public address
    "::ffff:0:0a00:1",
    "::ffff:0:808:808",
    "::a9fe:a9fe",
    "::808:808",
    "::",
    "::1",
    "::2",
    # NAT64, well-known prefix, of non-public addresses; local-use NAT64 whatever it carries
    "64:ff9b::7f00:1",
    "64:ff9b::a00:1",
    "64:ff9b::c0a8:101",
    "64:ff9b:1::a9fe:a9fe",
    "64:ff9b:1::808:808",
    "64:ff9b:0:0:1::1",  # in 64:ff9b::/32 but not the /96: outside global unicast
    # 6to4 of non-public addresses
    "2002:a9fe:a9fe::1",
    "2002:a00:1::1",
    "2002:c0a8:101::",
    "2002::1",  # 0.0.0.0
    "2002:e000:1::1",  # multicast
    # Teredo, whatever it carries
    "2001::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    # private, link-local, multicast, documentation, benchmarking and other special IPv6
    "fc00::1",
    "fd00:ec2::254",  # the metadata service over IPv6
    "fe80::1",
    "fe80::1%eth0",
    "febf::1",
    "ff02::1",
    "ff0e::1",  # global-scope multicast
    "2001:db8::1",
    "3fff::1",
    "2001:2::1",
    "2001:10::1",  # ORCHID
    "100::1",  # discard-only
    "5f00::1",  # segment routing
    "4000::1",  # outside 2000::/3
    # IPv4: every special-purpose range
    "0.0.0.0",
    "0.1.2.3",
    "10.0.0.1",
    "100.64.0.1",
    "100.127.255.254",
    "127.0.0.1",
    "127.255.255.254",
    "169.254.169.254",
    "172.16.0.1",
    "172.31.255.254",
    "192.0.0.8",
    "192.0.0.170",
    "192.0.2.1",
    "192.88.99.1",
    "192.168.1.1",
    "198.18.0.1",
    "198.19.255.254",
    "198.51.100.1",
    "203.0.113.1",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    # not addresses at all
    "",
    "localhost",
    "1.2.3",
]

PUBLIC = [
    "93.184.215.14",
    "8.8.8.8",
    "1.1.1.1",
    "100.63.255.255",  # just below the shared space
    "100.128.0.1",  # just above it
    "172.32.0.1",
    "192.0.1.1",
    "198.20.0.1",
    "223.255.255.254",
    "2606:4700:4700::1111",
    "2a00:1450:4001::200e",
    "2001:4860:4860::8888",  # Google, just outside 2001::/23
    # IPv4-carrying forms of public addresses: on an IPv6-only network with DNS64 every
    # IPv4-only receiver resolves to its NAT64 form, so refusing it would refuse them all.
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "64:ff9b::5db8:d70e",
    "2002:808:808::1",
]


@pytest.mark.parametrize("address", REFUSED)
def test_every_non_public_form_is_refused_with_a_reason(address: str) -> None:
    assert not is_public(address)
    reason = non_public_reason(address)
    assert reason
    with pytest.raises(UnsafeDestination, match="non-public"):
        check_destination("https://hooks.example/x", lambda h, p: [address], allow_private=False)


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_accepted(address: str) -> None:
    assert non_public_reason(address) is None
    dest = check_destination("https://hooks.example/x", lambda h, p: [address], allow_private=False)
    assert dest.addresses == (address,)


def test_the_reason_names_the_embedded_address() -> None:
    assert non_public_reason("64:ff9b::a9fe:a9fe") == (
        "NAT64 form of 169.254.169.254, link-local (cloud metadata lives there)"
    )
    assert non_public_reason("2002:7f00:1::1") == "6to4 form of 127.0.0.1, loopback"
    assert non_public_reason("::ffff:10.0.0.1") == "IPv4-mapped form of 10.0.0.1, private"
    with pytest.raises(UnsafeDestination, match=r"\(::7f00:1: IPv4-compatible"):
        check_destination("https://a.example/", lambda h, p: ["::7f00:1"], allow_private=False)


def _every_form_of(v4: str) -> list[str]:
    """Each IPv6 form that can carry this IPv4 address."""
    n = int(ipaddress.IPv4Address(v4))
    return [
        str(ipaddress.IPv6Address((0xFFFF << 32) | n)),  # mapped
        str(ipaddress.IPv6Address((0xFFFF << 48) | n)),  # translated
        str(ipaddress.IPv6Address(n)),  # compatible
        str(ipaddress.IPv6Address((0x64FF9B << 96) | n)),  # NAT64
        str(ipaddress.IPv6Address((0x64FF9B0001 << 80) | n)),  # local-use NAT64
        str(ipaddress.IPv6Address((0x2002 << 112) | (n << 80) | 1)),  # 6to4
    ]


@pytest.mark.parametrize(
    "v4",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.5.4",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.1.1",
        "0.0.0.0",
        "198.18.1.1",
        "192.0.2.7",
        "224.0.0.251",
        "240.1.1.1",
    ],
)
def test_no_ipv6_form_of_a_non_public_ipv4_address_passes(v4: str) -> None:
    for form in _every_form_of(v4):
        assert not is_public(form), form


def test_only_the_forms_that_route_to_the_ipv4_host_pass_for_a_public_one() -> None:
    mapped, translated, compatible, nat64, local_nat64, sixtofour = _every_form_of("8.8.8.8")
    assert [is_public(a) for a in _every_form_of("8.8.8.8")] == [
        True,  # mapped: a dual-stack socket connects to 8.8.8.8 itself
        False,
        False,
        True,  # NAT64 through the well-known prefix: the public translator reaches 8.8.8.8
        False,
        True,  # 6to4: the relay reaches 8.8.8.8
    ], (mapped, translated, compatible, nat64, local_nat64, sixtofour)


def _numeric(host: str, port: int) -> Sequence[str]:
    """The system resolver, for numeric host names only: no DNS query leaves the machine."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    return sorted({str(info[4][0]) for info in infos})


@pytest.mark.parametrize(
    "url",
    [
        "https://2130706433/",  # 127.0.0.1 in decimal
        "https://0x7f000001/",  # in hex
        "https://0177.0.0.1/",  # in octal
        "https://0x7f.1/",  # short forms
        "https://127.1/",
        "https://0/",
        "https://0xa9.0xfe.0xa9.0xfe/",  # the metadata address in hex
        "https://[::ffff:127.0.0.1]/",
        "https://[::ffff:7f00:1]/",
        "https://[::ffff:0:7f00:1]/",
        "https://[::7f00:1]/",
        "https://[64:ff9b::a9fe:a9fe]/",
        "https://[2002:7f00:1::1]/",
        "https://[fec0::1]/",
        "https://[0:0:0:0:0:0:0:1]/",
        "https://[fe80::1%25eth0]/",
    ],
)
def test_every_way_of_writing_a_non_public_address_in_a_url_is_refused(url: str) -> None:
    try:
        resolved = _numeric(url.split("//")[1].split("/")[0].strip("[]").replace("%25", "%"), 443)
    except OSError:
        resolved = []  # a form this resolver does not take cannot be connected to either
    with pytest.raises(UnsafeDestination):
        check_destination(url, _numeric, allow_private=False)
    assert resolved == [] or not any(is_public(a) for a in resolved)


@pytest.mark.parametrize("address", ["::7f00:1", "64:ff9b::a9fe:a9fe", "fec0::1", "127.0.0.1"])
def test_allow_private_still_admits_every_form_for_development(address: str) -> None:
    dest = check_destination("https://a.example/", lambda h, p: [address], allow_private=True)
    assert dest.addresses == (address,)


@pytest.mark.parametrize("address", ["::7f00:1", "64:ff9b::a9fe:a9fe", "10.0.0.1", "fec0::1"])
def test_a_destination_cannot_hold_a_refused_address_however_it_is_made(address: str) -> None:
    """What the pinned connection connects to comes from a Destination only."""
    with pytest.raises(UnsafeDestination, match="non-public"):
        Destination("https", "a.example", 443, "/", (PUBLIC[0], address))
    assert Destination("https", "a.example", 443, "/", (address,), allow_private=True)
