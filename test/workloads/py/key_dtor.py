"""key_dtor: the Python phase of test/workloads/pyembed.c in its pthread_exit mode.

Makes an unreachable reference cycle after gc.disable() whose finalizer arms the pthread key of
libkey_dtor.so (KEY_DTOR) on the thread that runs it (nothing on the main thread) and writes
"in-steps". Waits for the library's thread (PY_AWAIT_TASKS, librarythread), prints "ready" and
returns at the first line of stdin, leaving a global whose __del__, run while the interpreter
finalises, calls setns(CLONE_NEWNS) on the process's own mount namespace (through ctypes.CDLL,
the GIL let go): the library sends its idle thread away for it, and the key's destructor runs
as that thread ends, while CPython finalises."""
import ctypes
import gc
import os
import sys

import librarythread

CLONE_NEWNS = 0x00020000


class Armed:
    def __del__(self, write=os.write, arm=ctypes.CDLL(os.environ["KEY_DTOR"]).key_dtor_arm):
        arm()
        write(1, b"in-steps\n")


class Late:
    def __del__(self, setns=ctypes.CDLL(None).setns,
                fd=os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)):
        setns(fd, CLONE_NEWNS)


def main():
    gc.disable()
    armed = Armed()
    armed.self = armed
    del armed
    librarythread.await_it()
    print("ready", flush=True)
    sys.stdin.buffer.readline()


main()
late = Late()
