"""exit_now: leaves cyclic garbage and daemon threads behind, prints "ready" and exits through
interpreter finalisation as soon as stdin reaches EOF, while rounds keep arriving. Its main
thread waits in bytecode (mainloop), so that requests are taken up to the moment it returns."""
import sys
import threading

import mainloop


class Node:
    pass


def spin():
    while True:
        n = Node()
        n.self = n


def main():
    for _ in range(2):
        threading.Thread(target=spin, daemon=True).start()
    for _ in range(1000):
        n = Node()
        n.self = n
    print("ready", flush=True)
    for _ in mainloop.lines():
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
