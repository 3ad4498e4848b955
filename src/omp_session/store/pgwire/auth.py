"""The password methods: MD5 and SCRAM-SHA-256 with SASLprep (hashlib, hmac and secrets are imported
only when a server asks for a password)."""

from __future__ import annotations

from .errors import OperationalError

__all__ = ["Scram", "md5_password"]


def md5_password(user: str, password: str, salt: bytes) -> str:
    import hashlib

    inner = hashlib.md5(password.encode() + user.encode()).hexdigest()
    return "md5" + hashlib.md5(inner.encode() + salt).hexdigest()


def _saslprep(password: str) -> str:
    """RFC 4013 as libpq applies it: an ASCII password as it is; a password SASLprep refuses
    is used as it is too."""
    if password.isascii():
        return password
    import stringprep
    import unicodedata

    mapped = "".join(
        " " if stringprep.in_table_c12(c) else c for c in password if not stringprep.in_table_b1(c)
    )
    text = unicodedata.normalize("NFKC", mapped)
    if not text:
        return password
    checks = (
        stringprep.in_table_c12,
        stringprep.in_table_c21_c22,
        stringprep.in_table_c3,
        stringprep.in_table_c4,
        stringprep.in_table_c5,
        stringprep.in_table_c6,
        stringprep.in_table_c7,
        stringprep.in_table_c8,
        stringprep.in_table_c9,
        stringprep.in_table_a1,
    )
    if any(check(c) for c in text for check in checks):
        return password
    bidi = any(stringprep.in_table_d1(c) for c in text)
    if bidi and (
        any(stringprep.in_table_d2(c) for c in text)
        or not (stringprep.in_table_d1(text[0]) and stringprep.in_table_d1(text[-1]))
    ):
        return password
    return text


def _nonce() -> str:
    import base64
    import secrets

    return base64.b64encode(secrets.token_bytes(18)).decode()


class Scram:
    """SCRAM-SHA-256 (RFC 5802, 7677) as PostgreSQL runs it: no channel binding, the user name
    left empty (the server takes the start-up packet's)."""

    def __init__(self, password: str, user: str = "", nonce: str | None = None) -> None:
        self.password = _saslprep(password)
        self.user = user
        self.nonce = nonce or _nonce()
        self.bare = f"n={user},r={self.nonce}"
        self.server_signature = b""

    def first(self) -> str:
        return "n,," + self.bare

    def final(self, server_first: str) -> str:
        import base64
        import hashlib
        import hmac

        attrs = dict(part.split("=", 1) for part in server_first.split(",") if "=" in part)
        nonce, salt, iterations = attrs.get("r", ""), attrs.get("s", ""), attrs.get("i", "")
        if not nonce.startswith(self.nonce) or nonce == self.nonce:
            raise OperationalError("invalid SCRAM response (nonce mismatch)")
        raw_salt = _base64(salt, "salt")
        if not iterations.isdigit() or not 0 < int(iterations) < 1 << 31:
            raise OperationalError("malformed SCRAM message (invalid iteration count)")
        salted = hashlib.pbkdf2_hmac("sha256", self.password.encode(), raw_salt, int(iterations))
        without_proof = f"c=biws,r={nonce}"
        auth = f"{self.bare},{server_first},{without_proof}".encode()
        client_key = hmac.digest(salted, b"Client Key", "sha256")
        signature = hmac.digest(hashlib.sha256(client_key).digest(), auth, "sha256")
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self.server_signature = hmac.digest(hmac.digest(salted, b"Server Key", "sha256"), auth, "sha256")
        return f"{without_proof},p={base64.b64encode(proof).decode()}"

    def verify(self, server_final: str) -> bool:
        """Whether the server's signature is the one only a holder of the password computes (a
        malformed message or the server's ``e=`` error: :class:`.OperationalError`, as libpq)."""
        import hmac

        if server_final.startswith("e="):
            raise OperationalError(f"error received from server in SCRAM exchange: {server_final[2:]}")
        signature = _base64(server_final[2:] if server_final.startswith("v=") else "", "server signature")
        if len(signature) != len(self.server_signature):
            raise OperationalError("malformed SCRAM message (invalid server signature)")
        return hmac.compare_digest(signature, self.server_signature)


def _base64(text: str, what: str) -> bytes:
    """Strict base64 (Python's default skips what is not base64: a salt of garbage would be empty)."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(text, validate=True)
    except binascii.Error:
        decoded = b""
    if not decoded:
        raise OperationalError(f"malformed SCRAM message (invalid {what})")
    return decoded
