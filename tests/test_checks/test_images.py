"""An image's bytes against the type its data URL declares, and the hosts an https: image URL
may name (read as a URL parser reads them)."""

from __future__ import annotations

import pytest

from checks.images import bytes_problem, url_problem

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 8
JPEG = b"\xff\xd8\xff\xe0" + b"\0" * 8
GIF = b"GIF89a" + b"\0" * 8
WEBP = b"RIFF\x10\0\0\0WEBPVP8 "


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("png", PNG),
        ("PNG", PNG),
        ("jpeg", JPEG),
        ("jpg", JPEG),
        ("gif", GIF),
        ("gif", b"GIF87a"),
        ("webp", WEBP),
    ],
)
def test_an_image_of_its_declared_type_passes(kind: str, data: bytes) -> None:
    assert bytes_problem(kind, data) is None


@pytest.mark.parametrize(
    ("kind", "data", "says"),
    [
        ("png", b"", "the image is empty (0 bytes)"),
        ("png", JPEG, "the bytes are not a PNG image"),
        ("jpeg", PNG, "the bytes are not a JPEG image"),
        ("jpg", b"\xff\xd8", "the bytes are not a JPEG image"),
        ("gif", b"GIF90a", "the bytes are not a GIF image"),
        ("webp", b"RIFF\0\0\0\0WAVEfmt ", "the bytes are not a WEBP image"),
        ("png", b"<svg onload=alert(1)>", "the bytes are not a PNG image"),
    ],
)
def test_an_image_that_is_not_what_it_says_is_refused(kind: str, data: bytes, says: str) -> None:
    assert bytes_problem(kind, data) == says + (
        "" if not data else " (the type the data URL declares)"
    )


LOCAL = "must not point to a loopback, private or link-local address"


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/a.png",
        "https://127.1/a.png",
        "https://0x7f.0.0.1/a.png",
        "https://0177.0.0.1/a.png",
        "https://2130706433/a.png",
        "https://0x7f000001/a.png",
        "https://127.0.0.1./a.png",
        "https://%31%32%37.0.0.1/a.png",
        "https://\uff11\uff12\uff17\u3002\uff10\u3002\uff10\u3002\uff11/a.png",
        "https://user:pw@127.0.0.1:8443/a.png",
        "https://localhost/a.png",
        "https://LOCALHOST./a.png",
        "https://api.localhost/a.png",
        "https://10.0.0.1/a.png",
        "https://172.16.5.4/a.png",
        "https://192.168.1.1/a.png",
        "https://169.254.169.254/latest/meta-data",
        "https://100.64.0.1/a.png",
        "https://0.0.0.0/a.png",
        "https://0/a.png",
        "https://224.0.0.1/a.png",
        "https://255.255.255.255/a.png",
        "https://[::1]/a.png",
        "https://[::]/a.png",
        "https://[fe80::1]/a.png",
        "https://[fc00::1]/a.png",
        "https://[fd12:3456::1]:443/a.png",
        "https://[::ffff:127.0.0.1]/a.png",
        "https://[::ffff:a00:1]/a.png",
        "https://[64:ff9b::7f00:1]/a.png",
        "https://[2002:7f00:1::]/a.png",
        "https://[ff02::1]/a.png",
    ],
)
def test_https_urls_to_local_addresses_are_refused(url: str) -> None:
    assert url_problem(url) == LOCAL, url


@pytest.mark.parametrize(
    "url",
    [
        "https://metadata.google.internal/computeMetadata/v1/",
        "https://METADATA.Google.Internal./x",
        "https://ip-10-0-0-1.ec2.internal/a.png",
        "https://metadata/a.png",  # one label: the fetcher's own network's search domains
        "https://instance-data/latest/meta-data",
        "https://printer.local/a.png",
        "https://router.lan/a.png",
        "https://nas.home.arpa/a.png",
        "https://box.localdomain/a.png",
        "https://files.corp/a.png",
        "https://localtest.me/a.png",
        "https://any.thing.lvh.me/a.png",
        "https://127.0.0.1.nip.io/a.png",
        "https://app.10.0.0.1.nip.io/a.png",
        "https://169.254.169.254.sslip.io/latest/meta-data",
        "https://10-0-0-1.nip.io/a.png",
        "https://magic-127-0-0-1.sslip.io/a.png",
        "https://ip-192-168-1-1.example.com/a.png",
        "https://c0a80001.nip.io/a.png",
        "https://app-7f000001.nip.io/a.png",
        "https://--1.sslip.io/a.png",
        "https://fe80--1.sslip.io/a.png",
        "https://x-fc00--1.sslip.io/a.png",
        "https://127.0.0.1.traefik.me/a.png",
    ],
)
def test_names_that_say_they_point_inside_are_refused_without_dns(url: str) -> None:
    assert url_problem(url) == LOCAL, url


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/cat.png",
        "https://images.example.com:8443/a/b.png?x=1",
        "https://93.184.215.14/cat.png",
        "https://8.8.8.8/a.png",
        "https://[2606:4700::6810:84e5]/a.png",
        "https://1.2.3.example/a.png",
        # Names that embed a global address, or look like one and are not: looked up elsewhere.
        "https://8.8.8.8.nip.io/a.png",
        "https://app-8-8-8-8.sslip.io/a.png",
        "https://1-2-3-4.cdn.example.com/a.png",
        "https://deadbeef.nip.io/a.png",
        "https://2606-4700--6810-84e5.sslip.io/a.png",
        "https://local.example.com/a.png",
        "https://internal-images.example.org/a.png",
        "https://999-0-0-1.example.com/a.png",
    ],
)
def test_https_urls_to_public_hosts_pass(url: str) -> None:
    assert url_problem(url) is None, url


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("https://256.0.0.1/a.png", "is not a valid URL"),
        ("https://1.2.3.4.5/a.png", "is not a valid URL"),
        ("https://08.0.0.1/a.png", "is not a valid URL"),
        ("https://1_0.0.0.1/a.png", "is not a valid URL"),
        ("https://1..2/a.png", "is not a valid URL"),
        ("https://[::1/a.png", "is not a valid URL"),
        ("https://[zz::1]/a.png", "is not a valid URL"),
        ("https:///a.png", "has no host"),
    ],
)
def test_hosts_no_url_parser_takes_are_refused(url: str, says: str) -> None:
    assert url_problem(url) == says, url
