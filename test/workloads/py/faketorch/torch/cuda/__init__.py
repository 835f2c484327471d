"""torch.cuda stand-in. FAKETORCH_CUDA_INITIALIZED: "1" initialised, "raise" raises, else not.
FAKETORCH_DEVICES: what device_count() returns (1 unless set); FAKETORCH_RESERVED: what
memory_reserved() returns (0 unless set). Each call appends its name and a newline to the file
FAKETORCH_LOG names; empty_cache adds " main" or " other", the thread it ran on."""
import os
import threading


def _record(name):
    path = os.environ.get("FAKETORCH_LOG")
    if path:
        with open(path, "a") as f:
            f.write(name + "\n")


def is_initialized():
    _record("is_initialized")
    state = os.environ.get("FAKETORCH_CUDA_INITIALIZED", "0")
    if state == "raise":
        raise RuntimeError("faketorch: is_initialized raised on purpose")
    return state == "1"


def device_count():
    _record("device_count")
    return int(os.environ.get("FAKETORCH_DEVICES", "1"))


def memory_reserved():
    _record("memory_reserved")
    return int(os.environ.get("FAKETORCH_RESERVED", "0"))


def empty_cache():
    # get_ident(), not current_thread(): the latter would leave a Dummy on a foreign thread.
    where = "main" if threading.get_ident() == threading.main_thread().ident else "other"
    _record("empty_cache " + where)
