"""Masking secrets wherever a source, its parameters or its errors are shown or stored.

Apart from ``analyzer.sources`` (which reaches the fetchers) so that the web UI, which may not import fetchers,
masks with the very same code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

MASK: Final = "********"
_USERINFO: Final = re.compile(r"(?<=//)[^/@\s]+@")


def mask_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value and every ``user:pass@`` of a URL replaced by the mask."""
    text = _USERINFO.sub(f"{MASK}@", text)
    for secret in sorted({str(s) for s in secrets if s}, key=len, reverse=True):  # longest first: one may hold another
        text = text.replace(secret, MASK)
    return text
