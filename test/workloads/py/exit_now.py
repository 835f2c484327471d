"""exit_now: leaves cyclic garbage and daemon threads behind, prints "ready" and exits through
interpreter finalisation as soon as stdin reaches EOF, while rounds keep arriving."""
import sys
import threading


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
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
