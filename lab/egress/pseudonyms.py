"""The pseudonym of a label value, byte for byte as the OpenTelemetry Collector contrib v0.165.1
``redactionprocessor`` makes it with ``hash_function: hmac-sha256`` (signals/egress.md, "Pseudonyms").

The processor masks the whole value of a blocked key (``(?s).*``, ``processor.go:38``) with
``hmac.New(sha256.New, []byte(string(hmac_key)))`` over ``[]byte(value)``, written as lower-case hex
with no prefix (``processor.go:438-442``): 64 characters. The key is the configured string's bytes,
used as they are (not decoded from hex or base64), at least 32 of them (``config.go:146-154``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable

HASH_FUNCTION = "hmac-sha256"  # the processor's `hash_function` value (config.go:28)
MIN_KEY_BYTES = 32  # config.go:147: the processor refuses a shorter hmac_key for hmac-sha256
PSEUDONYM_CHARS = 64  # hex of SHA-256's 32 bytes
_PSEUDONYM = re.compile(r"[0-9a-f]{64}")


def pseudonym(key: bytes, value: str) -> str:
    """The processor's replacement for ``value`` under ``key``: lower-case hex HMAC-SHA256 of its UTF-8
    bytes (Go's string bytes), nothing before or after."""
    return hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()


def keyed(key: bytes) -> Callable[[str], str]:
    """:func:`pseudonym` with ``key`` fixed, keyed once: for looking through many candidate names."""
    start = hmac.new(key, digestmod=hashlib.sha256)

    def of(value: str) -> str:
        mac = start.copy()
        mac.update(value.encode("utf-8"))
        return mac.hexdigest()

    return of


def normalised(text: str) -> str | None:
    """``text`` as a pseudonym the processor writes (64 lower-case hex digits; surrounding blanks and
    upper case forgiven, as a copy from a dashboard may have them), or None when it cannot be one."""
    candidate = text.strip().lower()
    return candidate if _PSEUDONYM.fullmatch(candidate) else None
