"""Process-wide signal record ([E5]): recorded during writes, raised at once while waiting."""

from __future__ import annotations

import os
import signal
import time

import pytest

from aikito_mem import signals
from aikito_mem.errors import InterruptedError_


def test_signal_is_recorded_then_raised_by_check():
    with signals.installed():
        os.kill(os.getpid(), signal.SIGTERM)
        assert signals.received() == signal.SIGTERM
        with pytest.raises(InterruptedError_) as info:
            signals.check()
    assert info.value.exit_code == 143


def test_signal_raises_at_once_inside_interruptible():
    with signals.installed():
        start = time.monotonic()
        with pytest.raises(InterruptedError_) as info, signals.interruptible():
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            old = signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
            try:
                time.sleep(5)
            finally:
                signal.signal(signal.SIGALRM, old)
        assert time.monotonic() - start < 4
    assert info.value.exit_code == 130


def test_uninstall_restores_previous_handlers():
    before = signal.getsignal(signal.SIGTERM)
    with signals.installed(), signals.installed():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
    assert signals.received() is None


def test_deferred_only_records_even_inside_interruptible():
    with signals.installed(), signals.interruptible():
        with signals.deferred():
            os.kill(os.getpid(), signal.SIGTERM)  # recorded, not raised: a write is in flight
            assert signals.received() == signal.SIGTERM
        with pytest.raises(InterruptedError_):
            signals.check()


def test_the_record_names_its_signals_as_the_signal_module_does():
    """The record's signal numbers and names are the ``signal`` module's."""
    assert (signals.SIGINT, signals.SIGTERM) == (signal.SIGINT, signal.SIGTERM)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        assert signals.signal_name(signum) == signal.Signals(signum).name
    assert "interrupted by SIGTERM;" in signals.interrupted_error(signal.SIGTERM).message


def test_installed_handlers_are_what_signal_getsignal_reports():
    before = signal.getsignal(signal.SIGINT)
    with signals.installed():
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler) and handler is not before
        assert signal.getsignal(signal.SIGTERM) is handler
    assert signal.getsignal(signal.SIGINT) is before
