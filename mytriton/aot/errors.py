"""The build tool's user-facing errors; the CLI maps each to an exit status."""
from __future__ import annotations


class AotError(Exception):
    """Base of every error the build tool reports to the user without a traceback."""

    exit_status = 1


class UsageError(AotError):
    """Bad command line or environment (exit status 2)."""

    exit_status = 2


class ManifestError(AotError):
    """An invalid manifest; names the manifest file and the offending line (exit status 2)."""

    exit_status = 2

    def __init__(self, path: str, line: int | None, message: str):
        self.path, self.line, self.message = path, line, message
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}")


class CompileFailed(AotError):
    """One or more specializations failed to compile (exit status 1).

    ``failures`` holds ``(labels, message)`` pairs: the specializations a message applies to
    (identical messages of one kernel are reported once) and the compiler's message.
    """

    exit_status = 1

    def __init__(self, failures: list[tuple[list[str], str]]):
        self.failures = failures
        count = sum(len(labels) for labels, _ in failures)
        super().__init__(f"{count} compilation(s) failed")
