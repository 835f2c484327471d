"""gil_hog: the only thread sits in a C call that holds the GIL (libc read(2) on stdin through
ctypes.PyDLL, which does not release it) until a byte arrives. Prints "ready" before the call,
"released" after it, then waits for EOF on stdin and exits 0."""
import ctypes
import sys


def main():
    libc = ctypes.PyDLL(None)
    buf = ctypes.create_string_buffer(1)
    print("ready", flush=True)
    libc.read(0, buf, 1)
    print("released", flush=True)
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
