"""Pure reading of a wheel's zip structure from byte ranges: where the central directory is, where
one member is (``.dist-info/METADATA``, or any path), and its text from the bytes of that member alone.

``client.IndexClient`` asks the server for just these ranges (the way pip's lazy wheels and uv
read metadata), so a wheel is never downloaded whole. Nothing here touches the network.
"""

from __future__ import annotations

import re
import struct
import zlib

import msgspec

__all__ = ["METADATA", "TAIL", "Member", "WheelFormatError", "central_directory", "find_member", "member_bytes",
           "member_text", "metadata_member", "metadata_text"]

METADATA = r"[^/]+\.dist-info/METADATA"  # the core metadata member of a wheel
TAIL = 64 * 1024  # the first request: the end of the file, which holds the EOCD (and often the directory)
_EOCD = b"PK\x05\x06"
_EOCD64 = b"PK\x06\x06"
_LOCATOR64 = b"PK\x06\x07"
_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"
LOCAL_HEADER = 30  # fixed part of a local file header


class WheelFormatError(ValueError):
    """Bytes that are not the zip structure a wheel has."""


class Member(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    method: int  # 0 stored, 8 deflated
    crc32: int
    compressed_size: int
    size: int
    header_offset: int  # of its local file header


def _zip64_directory(tail: bytes, at: int, tail_start: int) -> tuple[int, int]:
    """(offset, size) from the zip64 end-of-central-directory record the locator before ``at`` names."""
    loc = at - 20
    if loc < 0 or tail[loc:loc + 4] != _LOCATOR64:
        raise WheelFormatError("a zip64 file without its zip64 locator")
    (eocd64,) = struct.unpack_from("<Q", tail, loc + 8)
    rel = eocd64 - tail_start
    if rel < 0 or tail[rel:rel + 4] != _EOCD64:
        raise WheelFormatError("the zip64 end-of-central-directory record is not where its locator says")
    size, offset = struct.unpack_from("<QQ", tail, rel + 40)
    return offset, size


def central_directory(tail: bytes, tail_start: int) -> tuple[int, int]:
    """(offset, size) of the central directory, from the last ``len(tail)`` bytes of the file,
    which begin at file offset ``tail_start`` (zip64 included)."""
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        raise WheelFormatError("no end-of-central-directory record in the last bytes of the file")
    size, offset = struct.unpack_from("<II", tail, at + 12)
    if 0xFFFFFFFF in (offset, size):
        return _zip64_directory(tail, at, tail_start)
    return offset, size


def _members(directory: bytes) -> list[Member]:
    out: list[Member] = []
    at = 0
    while at + 46 <= len(directory) and directory[at:at + 4] == _CENTRAL:
        method, = struct.unpack_from("<H", directory, at + 10)
        crc, csize, size = struct.unpack_from("<III", directory, at + 16)
        nlen, xlen, clen = struct.unpack_from("<HHH", directory, at + 28)
        (offset,) = struct.unpack_from("<I", directory, at + 42)
        name = directory[at + 46:at + 46 + nlen].decode("utf-8", errors="replace")
        extra = directory[at + 46 + nlen:at + 46 + nlen + xlen]
        csize, size, offset = _zip64(extra, csize, size, offset)
        out.append(Member(name=name, method=method, crc32=crc, compressed_size=csize, size=size,
                          header_offset=offset))
        at += 46 + nlen + xlen + clen
    if not out:
        raise WheelFormatError("the central directory holds no entries")
    return out


def _zip64(extra: bytes, csize: int, size: int, offset: int) -> tuple[int, int, int]:
    """Sizes and offset from the zip64 extra field, for those the directory marks as 0xFFFFFFFF
    (in the field's order: size, compressed size, offset)."""
    at = 0
    while at + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, at)
        if tag == 1:
            values = iter(struct.unpack_from(f"<{length // 8}Q", extra, at + 4))
            size, csize, offset = (next(values, v) if v == 0xFFFFFFFF else v for v in (size, csize, offset))
        at += 4 + length
    return csize, size, offset


def find_member(directory: bytes, pattern: str) -> Member:
    """The one member listed in the central directory whose path matches ``pattern`` entirely."""
    found = [m for m in _members(directory) if re.fullmatch(pattern, m.name)]
    if len(found) != 1:
        raise WheelFormatError(f"the wheel has {len(found)} members matching {pattern}, not one")
    return found[0]


def metadata_member(directory: bytes) -> Member:
    """The ``<name>-<version>.dist-info/METADATA`` member listed in the central directory."""
    return find_member(directory, METADATA)


def member_bytes(m: Member) -> int:
    """How many bytes from ``m.header_offset`` to ask for: the local header, a generous name and
    extra field, and the compressed data."""
    return LOCAL_HEADER + 1024 + m.compressed_size


def metadata_text(m: Member, chunk: bytes) -> str:
    """The METADATA member's text from ``chunk`` (see :func:`member_text`)."""
    return member_text(m, chunk)


def _inflated(m: Member, data: bytes) -> bytes:
    """The member's bytes, stored (0) or deflated (8), the two methods wheels use."""
    if m.method not in (0, 8):
        raise WheelFormatError(f"{m.name} uses zip compression method {m.method} (wheels use 0 or 8)")
    try:
        return data if m.method == 0 else zlib.decompressobj(-15).decompress(data)
    except zlib.error as e:
        raise WheelFormatError(f"{m.name} does not inflate ({e})") from None


def member_text(m: Member, chunk: bytes) -> str:
    """The member's text from ``chunk``, the bytes from its local header on (CRC-32 checked)."""
    if chunk[:4] != _LOCAL or len(chunk) < LOCAL_HEADER:
        raise WheelFormatError(f"no local file header at the offset the directory gives for {m.name}")
    nlen, xlen = struct.unpack_from("<HH", chunk, 26)
    start = LOCAL_HEADER + nlen + xlen
    data = chunk[start:start + m.compressed_size]
    if len(data) != m.compressed_size:
        raise WheelFormatError(f"{m.name} is cut short")
    raw = _inflated(m, data)
    if zlib.crc32(raw) != m.crc32:
        raise WheelFormatError(f"{m.name} does not match its CRC-32")
    return raw.decode("utf-8", errors="replace")
