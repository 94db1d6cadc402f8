"""The pseudonym is the redactionprocessor's (contrib v0.165.1, hash_function: hmac-sha256) byte for
byte: lower-case hex HMAC-SHA256 of the value's UTF-8 bytes under the key string's bytes, no prefix
(signals/egress.md, "Pseudonyms"). The expected values are pinned as literals and recomputed here with
Python's hmac module, independently of lab.egress."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from lab.egress.pseudonyms import MIN_KEY_BYTES, PSEUDONYM_CHARS, keyed, normalised, pseudonym

# The shortest key the processor accepts for hmac-sha256 (its config_test.go:163 at v0.165.1).
KEY = b"a" * 32


def independent(key: bytes, value: str) -> str:
    return hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("alice", "584b503b44d8eaa976f82e9fe0833ed56705c4698e28633bddc6e483303dbc2a"),
        # `(?s).*` matches the empty string too (processor.go:38): an empty value is hashed as well.
        ("", "a5c44c366680c9ae1d4986d2499755aac34c67ab95dd1214e4f3c2de516db03f"),
        # Go hashes a string's bytes: UTF-8.
        ("jürgen", "6f34d802d466a107d633422f8ecaddc14345c4dee3ded733de72a93cc0ad4f1c"),
    ],
)
def test_the_pseudonym_is_the_hex_hmac_sha256_of_the_value(value: str, expected: str) -> None:
    assert independent(KEY, value) == expected, "the pinned literal is Python's own HMAC-SHA256"
    assert pseudonym(KEY, value) == expected
    assert keyed(KEY)(value) == expected


def test_rfc_4231_test_case_2() -> None:
    """The published HMAC-SHA256 vector (RFC 4231 §4.3: key "Jefe"): the function is plain HMAC-SHA256
    over the key's bytes as given, not a hex- or base64-decoded key."""
    expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    assert pseudonym(b"Jefe", "what do ya want for nothing?") == expected


def test_the_key_is_the_strings_bytes_not_its_decoding() -> None:
    hex_key = b"00" * 32
    assert pseudonym(hex_key, "alice") == independent(hex_key, "alice")
    assert pseudonym(hex_key, "alice") != independent(bytes(32), "alice")


def test_the_shape_the_processor_writes() -> None:
    made = pseudonym(KEY, "team-a")
    assert len(made) == PSEUDONYM_CHARS == 64
    assert made == made.lower() and all(c in "0123456789abcdef" for c in made)
    assert MIN_KEY_BYTES == 32  # config.go:147 at v0.165.1


def test_another_key_another_pseudonym() -> None:
    assert pseudonym(KEY, "alice") != pseudonym(b"b" * 32, "alice")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("584b503b44d8eaa976f82e9fe0833ed56705c4698e28633bddc6e483303dbc2a", True),
        ("  584B503B44D8EAA976F82E9FE0833ED56705C4698E28633BDDC6E483303DBC2A\n", True),
        ("584b503b", False),
        ("sha256:584b503b44d8eaa976f82e9fe0833ed56705c4698e28633bddc6e483303dbc2a", False),
        ("z" * 64, False),
    ],
)
def test_normalised_accepts_only_what_the_processor_could_have_written(text: str, expected: bool) -> None:
    result = normalised(text)
    assert (result is not None) == expected
    if result is not None:
        assert result == "584b503b44d8eaa976f82e9fe0833ed56705c4698e28633bddc6e483303dbc2a"
