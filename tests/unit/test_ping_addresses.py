"""The ping guard reads the IPv4 address inside every IPv4-embedding IPv6 form and refuses
the address when the IPv4 one is not public (review 4: SIIT and local-use NAT64 got past)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_app.observability.addresses import embedded_ipv4, forbidden

INNER = ["10.0.0.1", "127.0.0.1", "169.254.169.254", "192.168.1.1", "100.64.0.1", "0.0.0.0"]


def v4(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def six(value: int) -> str:
    return str(ipaddress.IPv6Address(value))


FORMS = {
    "IPv4-mapped": lambda a: six((0xFFFF << 32) | a),
    "IPv4-compatible": lambda a: six(a),
    "SIIT ::ffff:0:a.b.c.d": lambda a: six((0xFFFF << 48) | a),
    "NAT64 64:ff9b::/96": lambda a: six((0x64FF9B << 96) | a),
    "local-use NAT64 /96": lambda a: six((0x64FF9B0001 << 80) | a),
    "local-use NAT64 /48": lambda a: six(
        (0x64FF9B0001 << 80) | ((a >> 16) << 64) | ((a & 0xFFFF) << 40)
    ),
    "local-use NAT64 /64": lambda a: six((0x64FF9B0001 << 80) | (a << 24)),
    "6to4": lambda a: six((0x2002 << 112) | (a << 80)),
    "Teredo client": lambda a: six((0x20010000 << 96) | (a ^ 0xFFFF_FFFF)),
    "ISATAP": lambda a: six((0x20014860 << 96) | (0x5EFE << 32) | a),
}


@pytest.mark.parametrize("inner", INNER)
@pytest.mark.parametrize("form", list(FORMS))
def test_a_private_ipv4_inside_any_ipv6_form_is_refused(form: str, inner: str) -> None:
    address = FORMS[form](v4(inner))
    assert forbidden(address), address


@pytest.mark.parametrize(
    ("address", "inner"),
    [
        ("::ffff:0:a00:1", "10.0.0.1"),
        ("64:ff9b:1::a9fe:a9fe", "169.254.169.254"),
        ("64:ff9b::7f00:1", "127.0.0.1"),
        ("2001:4860::5efe:c0a8:101", "192.168.1.1"),
    ],
)
def test_the_embedded_address_is_read_from_the_ipv6_one(address: str, inner: str) -> None:
    assert ipaddress.IPv4Address(inner) in embedded_ipv4(ipaddress.IPv6Address(address))


@pytest.mark.parametrize(
    "form", ["SIIT ::ffff:0:a.b.c.d", "NAT64 64:ff9b::/96", "6to4", "ISATAP", "IPv4-mapped"]
)
def test_a_public_ipv4_inside_a_translatable_form_is_let_through(form: str) -> None:
    assert not forbidden(FORMS[form](v4("8.8.8.8")))


def test_a_plain_public_ipv6_address_is_let_through() -> None:
    assert not forbidden("2606:4700:4700::1111")


@given(inner=st.ip_addresses(v=4).filter(lambda ip: not ip.is_global))
def test_no_form_carries_any_non_public_ipv4(inner: ipaddress.IPv4Address) -> None:
    for make in FORMS.values():
        assert forbidden(make(int(inner)))


@pytest.mark.parametrize(
    "address",
    [
        "fd00::5efe:808:808",
        "fe80::5efe:808:808",
        "fc00:1::200:5efe:808:808",
        "2001:db8::5efe:808:808",
    ],
)
def test_a_non_public_ipv6_with_an_isatap_ending_is_refused(address: str) -> None:
    """Review 5: a public IPv4 in an ISATAP-style ending let the IPv6 address itself through."""
    assert forbidden(address)
