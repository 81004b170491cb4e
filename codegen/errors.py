"""qkgen's exceptions. Every message names the argument at fault and what is allowed."""


class QKGenError(Exception):
    """Base of qkgen's own errors."""


class QKGenValueError(QKGenError, ValueError):
    """Bad input: wrong dtype, shape, blocksize, alignment, layout or unknown name."""


class FormatError(QKGenValueError):
    """A format row, or a request for a format, that qkgen cannot honour."""


class BackendUnavailable(QKGenError, RuntimeError):
    """The requested backend or device cannot be used here; the message says why."""


class BuildError(QKGenError, RuntimeError):
    """A generated kernel failed to compile. Holds the build log and the numbered source."""

    def __init__(self, backend: str, kernel: str, log: str, source: str):
        self.backend, self.kernel, self.log, self.source = backend, kernel, log, source
        numbered = "\n".join(f"{i:5d}  {line}" for i, line in enumerate(source.splitlines(), 1))
        super().__init__(f"{backend}: building {kernel} failed:\n{log.strip()}\n\n--- source ---\n{numbered}")


__all__ = ["FormatError", "QKGenError", "QKGenValueError", "BackendUnavailable", "BuildError"]
