"""mountns DIR: a program that switches mount namespaces, run as root, with the collector enabled
and its threshold at 0 (only an explicit full collection frees its cycles), waiting in one C call
between rounds as an FL client waits for its next model.

It works in DIR, where it writes a file "marker" holding "outside". Each batch of N unreachable
reference cycles has a weakref.finalize callback; the one that finds its batch gone reads
"marker" by its relative path and writes "TAG by=NAME marker=TEXT" to stdout (NAME:
threading.current_thread().name where it runs; TEXT: what it read, "-" if nothing).

Waits for the library's thread where PY_AWAIT_TASKS says so (librarythread), prints "ready", then
waits for a line of stdin (a read, one C call): batch "first" is there to be collected meanwhile.
Then, through ctypes (the global symbols, as a C program's call or os.setns of Python 3.12 reach
them): setns(open("/proc/self/ns/mnt"), CLONE_NEWNS), printed "setns=R" (R: 0, or the errno's
name), and back to DIR; then unshare(CLONE_NEWNS), / made private, a tmpfs mounted on DIR/inner,
the working directory moved there and a "marker" holding "inside" written in it, printed
"unshare=R mount=R". It makes batch "second", waits for the library's thread again, prints
"waiting" and reads a line of stdin again. EOF ends it, with status 0 and no finalisation."""
import ctypes
import errno
import gc
import os
import sys
import threading
import weakref

import librarythread

CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
N = 100
done = {}
libc = ctypes.CDLL(None, use_errno=True)


class Node:
    pass


def finalized(tag):
    done[tag] = done.get(tag, 0) + 1
    if done[tag] == N:
        try:
            with open("marker") as f:
                text = f.read().strip()
        except OSError:
            text = "-"
        name = threading.current_thread().name
        os.write(1, ("%s by=%s marker=%s\n" % (tag, name, text)).encode())


def cycles(tag):
    for _ in range(N):
        a, b = Node(), Node()
        a.other, b.other = b, a
        weakref.finalize(a, finalized, tag)


def result(rc):
    return "0" if rc == 0 else errno.errorcode.get(ctypes.get_errno(), "?")


def main():
    os.chdir(sys.argv[1])
    with open("marker", "w") as f:
        f.write("outside\n")
    gc.set_threshold(0)
    cycles("first")
    librarythread.await_it()
    print("ready", flush=True)
    sys.stdin.buffer.readline()
    fd = os.open("/proc/self/ns/mnt", os.O_RDONLY)
    print("setns=" + result(libc.setns(fd, CLONE_NEWNS)), flush=True)
    os.close(fd)
    # A switch of mount namespace moves the working directory to its root.
    os.chdir(sys.argv[1])
    unshared = result(libc.unshare(CLONE_NEWNS))
    os.mkdir("inner")
    mounted = libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    if mounted == 0:
        mounted = libc.mount(b"tmpfs", b"inner", b"tmpfs", 0, None)
    print("unshare=%s mount=%s" % (unshared, result(mounted)), flush=True)
    os.chdir("inner")
    with open("marker", "w") as f:
        f.write("inside\n")
    cycles("second")
    librarythread.await_it()
    print("waiting", flush=True)
    sys.stdin.buffer.readline()
    # Without finalisation, whose collection would run what is left of the batches.
    os._exit(0)


if __name__ == "__main__":
    main()
