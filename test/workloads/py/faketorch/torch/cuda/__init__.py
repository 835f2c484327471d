"""torch.cuda stand-in. FAKETORCH_CUDA_INITIALIZED: "1" initialised, "raise" raises, else not
(torch's `_initialized` flag says the same; False in a fork child, as torch makes it). FAKETORCH_CAPTURING="1": the calling thread's stream
captures a CUDA graph. FAKECUDA_LIB: a stand-in driver (test/workloads/dso/fake_cuda.c) loaded
at import, as PyTorch loads libcuda. Each call appends its name and a newline to the file
FAKETORCH_LOG names; empty_cache adds " main" or " other", the thread it ran on."""
import ctypes
import os
import threading

_state = os.environ.get("FAKETORCH_CUDA_INITIALIZED", "0")
_initialized = _state == "1"
_driver = ctypes.CDLL(os.environ["FAKECUDA_LIB"]) if os.environ.get("FAKECUDA_LIB") else None


def _after_fork():
    # As PyTorch's own hook: CUDA cannot be used in a fork child.
    global _initialized
    _initialized = False


os.register_at_fork(after_in_child=_after_fork)


def _record(name):
    path = os.environ.get("FAKETORCH_LOG")
    if path:
        with open(path, "a") as f:
            f.write(name + "\n")


def is_initialized():
    _record("is_initialized")
    if _state == "raise":
        raise RuntimeError("faketorch: is_initialized raised on purpose")
    return _initialized


def is_current_stream_capturing():
    _record("is_current_stream_capturing")
    return os.environ.get("FAKETORCH_CAPTURING") == "1"


def empty_cache():
    # get_ident(), not current_thread(): the latter would leave a Dummy on a foreign thread.
    where = "main" if threading.get_ident() == threading.main_thread().ident else "other"
    _record("empty_cache " + where)
