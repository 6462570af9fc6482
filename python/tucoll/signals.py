"""SIGTERM and SIGHUP (`timeout`, a batch system's cancel, a closed terminal) end the tools as an
exception would, so that what they started ends with them: simulations run in a session of their
own, which no signal to the caller's process group reaches (sim.run_simulation)."""

import signal

ENDING = (signal.SIGTERM, signal.SIGHUP)
_installed = False


def exit_on_signal(signum: int, frame) -> None:
    raise SystemExit(128 + signum)


def install() -> None:
    global _installed
    _installed = True
    for signum in ENDING:
        signal.signal(signum, exit_on_signal)


def reassert() -> None:
    """Puts the handlers back after loading a library whose constructors take signals (an
    MPICH-linked libtucoll takes SIGHUP)."""
    if _installed:
        install()
