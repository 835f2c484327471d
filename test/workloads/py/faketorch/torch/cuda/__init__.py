"""torch.cuda stand-in. FAKETORCH_CUDA_INITIALIZED: "1" initialised, "raise" raises, else not.
Each call appends its name and a newline to the file FAKETORCH_LOG names."""
import os


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


def empty_cache():
    _record("empty_cache")
