"""What a simulation that cannot run, or fails, raises."""

from __future__ import annotations


class SimError(RuntimeError):
    def __init__(self, message: str, returncode: int | None = None):
        super().__init__(message)
        self.returncode = returncode  # the simulator's, where it ran; negative: ended by a signal

    def __reduce__(self):  # raised on a Dask worker, re-raised in the caller
        return SimError, (str(self), self.returncode)

    @property
    def killed(self) -> bool:
        """Ended by a signal from outside (a cancelled job, the OOM killer): not the spec's doing."""
        return self.returncode is not None and self.returncode < 0
