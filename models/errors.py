"""The one error every resolver raises when a model cannot be had."""

from __future__ import annotations


class ModelNotFound(RuntimeError):
    """A model for ``capability`` is not available.

    The message names the capability, every place that was looked at and the
    command that fixes it, so the person who sees it knows what to do.
    """

    def __init__(self, capability: str, looked_for: list[str], fix: str) -> None:
        self.capability = capability
        self.looked_for = looked_for
        self.fix = fix
        lines = "\n".join(f"  - {item}" for item in looked_for)
        super().__init__(
            f"No model for {capability}. Looked for:\n{lines}\nTo fix it, run: {fix}"
        )


class ModelIntegrityError(RuntimeError):
    """An assembled model does not match its recorded sha256."""
