"""Keeps the client's own API key out of every text it produces (exception messages and attributes, the
``on_retry`` events): a server or proxy that echoes the request (a debugging page, a misconfigured error
handler) must not put the key into a traceback, a log or a bug report."""

from __future__ import annotations

#: What the key is replaced with.
REDACTED = "[redacted API key]"
#: A key is ``<prefix>_live_<secret><checksum>``; the prefix is fixed and the checksum recomputable, so the
#: part after ``live_`` alone is as good as the key (a proxy might echo only that).
_SECRET_MARK = "_live_"
#: Shorter fragments are not worth hiding (and would blank out ordinary words of a message).
_MIN_SECRET = 20


class Redactor:
    """Replaces the key, and the secret part of it, in any text."""

    def __init__(self, api_key: str) -> None:
        secrets = [api_key]
        mark = api_key.find(_SECRET_MARK)
        if mark >= 0 and len(api_key) - mark - len(_SECRET_MARK) >= _MIN_SECRET:
            secrets.append(api_key[mark + len(_SECRET_MARK) :])
        # Longest first: the whole key is replaced before its tail could be found inside it.
        self._secrets = sorted({s for s in secrets if s.strip()}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def optional(self, text: str | None) -> str | None:
        return None if text is None else self(text)

    def __repr__(self) -> str:
        # Never the key, should a Redactor end up in a log.
        return "Redactor()"


def no_redaction(text: str) -> str:
    return text
