"""What an image a client sends must be, beyond its size: a data URL's bytes of the type it
declares (the file's own signature), and an https: URL that does not name a local address.

The Worker fetches no image itself; a remote URL goes to Workers AI, which may. A host that is
an IP literal is read as a URL parser reads it (WHATWG: `127.1`, `0x7f.0.0.1`, `2130706433`
and `[::ffff:127.0.0.1]` are all loopback) and must be a global unicast address. Names are
refused without DNS where the name itself says where it points: `localhost` and its subdomains;
names a resolver answers only inside a network (one label, `.local`, `.internal` with
`metadata.google.internal`, `.lan`, `.home.arpa`, ...); the public names that always answer
loopback (`localtest.me`, `lvh.me`, ...); and a name that embeds an address that is not global,
as wildcard DNS services answer it (`127.0.0.1.nip.io`, `10-0-0-1.sslip.io`, `c0a80001.nip.io`,
`--1.sslip.io`). Any other name that resolves to a private address cannot be told from here
(no DNS lookup in the request path).
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import unicodedata
from urllib.parse import unquote, urlsplit

# Each declared type and how its files start (PNG, JPEG/JFIF/EXIF, GIF87a/89a, RIFF....WEBP).
SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "png": (b"\x89PNG\r\n\x1a\n",),
    "jpeg": (b"\xff\xd8\xff",),
    "jpg": (b"\xff\xd8\xff",),
    "gif": (b"GIF87a", b"GIF89a"),
}


def bytes_problem(kind: str, data: bytes) -> str | None:
    """Why `data` is not an image of the declared `kind` (png, jpeg, jpg, gif, webp), or None."""
    if not data:
        return "the image is empty (0 bytes)"
    kind = kind.lower()
    if kind == "webp":
        ok = data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    else:
        ok = data.startswith(SIGNATURES[kind])
    if ok:
        return None
    named = "JPEG" if kind == "jpg" else kind.upper()
    return f"the bytes are not a {named} image (the type the data URL declares)"


# What IDNA maps to "." before a host is parsed (ideographic and full-width full stops).
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})


def url_problem(url: str) -> str | None:
    """Why an https: image URL may not go to the model, or None."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:  # e.g. an unclosed [ in the host
        return "is not a valid URL"
    host = netloc.rpartition("@")[2]
    if host.startswith("["):
        literal = host[1 : host.find("]")] if "]" in host else host[1:]
        try:
            return _address_problem(ipaddress.IPv6Address(literal.partition("%")[0]))
        except ValueError:
            return "is not a valid URL"
    host = host.rpartition(":")[0] if ":" in host else host
    name = unicodedata.normalize("NFKC", unquote(host)).translate(_DOTS).lower().rstrip(".")
    if not name:
        return "has no host"
    labels = name.split(".")
    if not _numeric(labels[-1]):
        return _name_problem(name, labels)
    v4 = _ipv4(labels)
    if v4 is None:
        return "is not a valid URL"
    return _address_problem(ipaddress.IPv4Address(v4))


LOCAL = "must not point to a loopback, private or link-local address"
# Names that only a resolver inside a network answers (RFC 6761, 6762, 8375, and what clouds
# and routers use: GCP's metadata.google.internal, AWS's ec2.internal, home routers' .lan),
# and public names that always answer loopback. A host is refused when it is one of them or
# under one.
_LOCAL_SUFFIXES = (
    "localhost",
    "local",
    "internal",
    "intranet",
    "lan",
    "home",
    "corp",
    "private",
    "localdomain",
    "home.arpa",
    "localtest.me",
    "lvh.me",
    "vcap.me",
    "lacolhost.com",
)
# Wildcard DNS services, which answer the address a name spells: also in hex, and IPv6 in dashes.
_WILDCARD_DNS = ("nip.io", "sslip.io", "xip.io", "traefik.me", "local.gd")
_DASHED = re.compile(r"(?<![0-9])(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})(?![0-9])")
_HEX8 = re.compile(r"(?<![0-9a-f])[0-9a-f]{8}(?![0-9a-f])")


def _under(name: str, suffixes: tuple[str, ...]) -> bool:
    return any(name == s or name.endswith("." + s) for s in suffixes)


def _name_problem(name: str, labels: list[str]) -> str | None:
    """Why a host name points where an image URL may not, as far as the name itself says."""
    if len(labels) == 1 or _under(name, _LOCAL_SUFFIXES):
        return LOCAL
    for address in _embedded(name, labels):
        if _address_problem(address) is not None:
            return LOCAL
    return None  # a name: looked up by whoever fetches it


def _embedded(name: str, labels: list[str]) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The addresses a name spells: four decimal labels in a row (`10.0.0.1.nip.io`), four
    numbers in dashes (`ip-10-0-0-1.example`), and under a wildcard DNS service eight hex digits
    (`c0a80001.nip.io`) or an IPv6 address with dashes for colons (`--1.sslip.io`)."""
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for i in range(len(labels) - 3):
        run = labels[i : i + 4]
        if all(part.isascii() and part.isdigit() and int(part) <= 255 for part in run):
            found.append(ipaddress.IPv4Address(".".join(str(int(part)) for part in run)))
    for label in labels:
        for match in _DASHED.finditer(label):
            if all(int(part) <= 255 for part in match.groups()):
                found.append(ipaddress.IPv4Address(".".join(match.groups())))
    if _under(name, _WILDCARD_DNS):
        for label in labels:
            for match in _HEX8.finditer(label):
                found.append(ipaddress.IPv4Address(int(match.group(), 16)))
            if "--" in label or label.count("-") >= 2:
                for part in (label, label.rpartition("-")[2], label.partition("-")[2]):
                    with contextlib.suppress(ValueError):  # not an address: nothing found
                        found.append(ipaddress.IPv6Address(part.replace("-", ":")))
    return found


def _address_problem(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return _address_problem(embedded)
    if address.is_global and not address.is_multicast:
        return None
    return LOCAL


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_DIGITS = {8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _numeric(label: str) -> bool:
    """The WHATWG "ends in a number" test: such a host is parsed as IPv4 or fails."""
    if label.isascii() and label.isdigit():
        return True
    return label[:2] in ("0x", "0X") and all(c in "0123456789abcdefABCDEF" for c in label[2:])


def _ipv4(labels: list[str]) -> int | None:
    """The WHATWG IPv4 parser: 1 to 4 parts, each decimal, 0x hex or 0-led octal, the last
    filling the bytes that are left; None where a URL parser would fail."""
    if not 1 <= len(labels) <= 4:
        return None
    numbers = []
    for label in labels:
        if label[:2] in ("0x", "0X"):
            digits, base = label[2:] or "0", 16
        elif len(label) > 1 and label.startswith("0"):
            digits, base = label[1:], 8
        else:
            digits, base = label, 10
        if not digits or len(digits) > 40 or not all(c in _DIGITS[base] for c in digits):
            return None
        numbers.append(int(digits, base))
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return value
