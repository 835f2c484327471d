"""mainloop: stdin, line by line, for a program whose main thread keeps running bytecode.

CPython runs a pending call (roundtrim's Python steps) on the main thread between bytecodes,
never while that thread is blocked inside a C call such as a read of stdin. lines() waits for
input with select() and a short timeout, so that the main thread comes back to the
interpreter loop often, as a training loop does. No thread, nothing imported by the caller."""
import os
import select

POLL_S = 0.01


def lines():
    """Yields each line of stdin (without its newline) until EOF."""
    pending = b""
    while True:
        ready, _, _ = select.select([0], [], [], POLL_S)
        if not ready:
            continue
        chunk = os.read(0, 4096)
        if not chunk:
            if pending:
                yield pending.decode()
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode()
