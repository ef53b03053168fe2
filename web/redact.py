"""Secrets out of every log line: one redaction applied to each log record as it is made.

It masks ``secret=`` and ``token=`` values (query strings in the access log), the
``X-Omi-Signature`` and ``X-Internal-Token`` header values, and any configured secret
(the access token, the Omi device and webhook secrets) wherever it appears. It runs in
the log record factory, so it covers every logger and handler, uvicorn's access log
included, whatever was configured before or after it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

MASK = "***"
_PATTERNS = [
    (re.compile(r"(?i)\b((?:secret|token)=)[^&\s\"',;]+"), rf"\g<1>{MASK}"),
    (re.compile(r"(?i)\b(v1=)[0-9a-f]{8,}"), rf"\g<1>{MASK}"),
    (re.compile(r"(?i)((?:x-omi-signature|x-internal-token)[\"']?\s*[:=,]\s*[\"']?(?:b')?)[^\"'\s,)]+"),
     rf"\g<1>{MASK}"),
]


class Redactor:
    """Masks the patterns above and the exact ``secrets`` given."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so a secret that contains another is masked whole.
        self.secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def record(self, record: logging.LogRecord) -> logging.LogRecord:
        """Mask the record in place. A formatter that reads the arguments (uvicorn's access
        log) keeps them, each masked; any other record gets its message formatted and
        masked whole, so a secret split between the text and an argument is caught too."""
        if record.name.startswith("uvicorn.access") and isinstance(record.args, tuple):
            record.args = tuple(self(a) if isinstance(a, str) else a for a in record.args)
            return record
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is logging's to report, not ours
            return record
        masked = self(message)
        if masked != message:
            record.msg, record.args = masked, None
        return record


class RedactingFilter(logging.Filter):
    """The same redaction as a filter, for a handler set up outside this process's factory."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        self.redactor.record(record)
        return True


_installed: Redactor | None = None


def install_redaction(secrets: Iterable[str | None] = ()) -> Redactor:
    """Redact every log record made from now on (calling again adds secrets)."""
    global _installed
    if _installed is not None:
        _installed.secrets = Redactor([*_installed.secrets, *secrets]).secrets
        return _installed
    redactor = Redactor(secrets)
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs) -> logging.LogRecord:
        return redactor.record(previous(*args, **kwargs))

    logging.setLogRecordFactory(factory)
    _installed = redactor
    return redactor
