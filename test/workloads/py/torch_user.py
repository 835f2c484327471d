"""torch_user: a program that imports torch (the fake one in faketorch/ on PYTHONPATH) unless
given --no-torch. Prints "ready", then for each line on stdin prints "torch=T main=M" (T: torch
in sys.modules; M: the names in __main__ that the program did not make). EOF ends it. The main
thread waits for input in bytecode (mainloop)."""
import sys

import mainloop

if "--no-torch" not in sys.argv:
    import torch  # noqa: F401

BASELINE = None


def main():
    global BASELINE
    main_mod = sys.modules["__main__"]
    BASELINE = set(vars(main_mod)) | {"BASELINE"}
    print("ready", flush=True)
    for _ in mainloop.lines():
        extra = sorted(set(vars(main_mod)) - BASELINE)
        print("torch=%s main=%s" % ("torch" in sys.modules, ",".join(extra) or "-"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
