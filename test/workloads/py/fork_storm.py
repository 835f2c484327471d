"""fork_storm N: a thread other than the main one forks N times while the main thread runs
bytecode and rounds arrive.

Makes 100 unreachable reference cycles with the collector enabled and its threshold at 0
(only a full collection frees them) and prints "ready". On "go" a thread forks N children one
after the other; each child runs some bytecode (making and dropping cyclic garbage, so that
the eval loop's pending-call checks run in it), checks that its collector is enabled and that
it is its only thread, and leaves with os._exit: 0 when all was well. The thread waits for
each child; meanwhile the main thread waits for it in bytecode. Then the program prints
"forks=N ok=K". Any other line is answered with "alive=K" (K: how many of the 100 cycles still
exist). EOF ends it."""
import gc
import os
import sys
import threading
import weakref

import mainloop


class Node:
    pass


def child_body():
    for _ in range(2000):
        n = Node()
        n.self = n
    if not gc.isenabled():
        return 3
    return 0 if threading.active_count() == 1 else 4


def forker(count, result):
    ok = 0
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = child_body()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            ok += 1
    result.append(ok)


def main():
    count = int(sys.argv[1])
    gc.set_threshold(0)
    refs = []
    for _ in range(100):
        a, b = Node(), Node()
        a.other, b.other = b, a
        refs.append(weakref.ref(a))
    del a, b
    print("ready", flush=True)
    for line in mainloop.lines():
        if line != "go":
            print("alive=%d" % sum(1 for r in refs if r() is not None), flush=True)
            continue
        result = []
        thread = threading.Thread(target=forker, args=(count, result))
        thread.start()
        while thread.is_alive():
            thread.join(0.01)
        print("forks=%d ok=%d" % (count, result[0] if result else -1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
