#!/usr/bin/python3
"""fl_client: an unmodified-looking federated-learning client, the Python round workload.

The "server" lives in this process: it keeps the global model's state and serialises it to bytes
at the start of each round. The client deserialises it (torch.load of a BytesIO), trains a few
SGD steps on batches of random size, serialises its update (torch.save) and drops it; the server
averages the update into its state. Batch sizes, the tensors they make and the bytes objects of
varying sizes are what fragment glibc's heap, as a real client's do.

After each round it prints
    round R rss_kib=S
(S from /proc/self/statm) and, with --wait, reads one line from stdin before the next round (EOF
ends the program): the protocol of test/workloads/frag.c. It waits as a client polls for its next
task, with a timeout, so that its main thread keeps coming back to the interpreter (where
roundtrim's Python steps run) rather than sitting in one blocking read.

--self-cleanup does what NVFlare's in-process cleanup does each round: gc.collect(), then
malloc_trim(0) through ctypes when the allocator is glibc ("jemalloc" if the process exports
mallctl, else "glibc" if it exports malloc_trim). By default (--self-cleanup=send) it runs where
NVFlare's client API runs it, inside send: right after the update is serialised, while the
round's trainer is still referenced by the code that called send. --self-cleanup=end runs it at
the very end of the round instead, once the program has dropped every reference: the best case
for an in-process cleanup, which a real training script rarely has a place for.
--scale F multiplies the hidden width (F=0.25 is quick); --seed S seeds batch sizes and data.

For round detection (none of these changes the default run): --batch MIN:MAX and --steps MIN:MAX
draw each step's batch size and each round's number of steps; --pause MIN:MAX sleeps a random
number of seconds before the first round and after each one, as a client waits for its server;
--duration S starts no round after S seconds; --boundaries prints "start T" before the first
pause and "boundary R T" at the end of round R (T: CLOCK_MONOTONIC microseconds).
"""
import argparse
import ctypes
import gc
import io
import os
import random
import select
import sys
import time

import numpy as np
import torch

IN_FEATURES = 1024
HIDDEN = 1536
LAYERS = 4
CLASSES = 10
STEPS = 3
MIN_BATCH = 4
MAX_BATCH = 40


def now_us():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def int_range(text):
    lo, _, hi = text.partition(":")
    lo, hi = int(lo), int(hi or lo)
    if lo < 1 or hi < lo:
        raise argparse.ArgumentTypeError("want MIN:MAX with 1 <= MIN <= MAX")
    return lo, hi


def seconds_range(text):
    lo, _, hi = text.partition(":")
    lo, hi = float(lo), float(hi or lo)
    if lo < 0 or hi < lo:
        raise argparse.ArgumentTypeError("want MIN:MAX with 0 <= MIN <= MAX")
    return lo, hi


def draw(rng, bounds, uniform=False):
    """A value in bounds; fixed bounds draw nothing, so that the default run's numbers stay."""
    lo, hi = bounds
    if lo == hi:
        return lo
    return rng.uniform(lo, hi) if uniform else rng.randint(lo, hi)


def rss_kib():
    with open("/proc/self/statm") as f:
        resident = int(f.read().split()[1])
    return resident * os.sysconf("SC_PAGE_SIZE") // 1024


def allocator_type():
    # NVFlare's rule (nvflare/fuel/utils/memory_utils.py).
    libc = ctypes.CDLL(None)
    if hasattr(libc, "mallctl"):
        return "jemalloc"
    if hasattr(libc, "malloc_trim"):
        return "glibc"
    return "unknown"


def self_cleanup(allocator):
    gc.collect()
    if allocator == "glibc":
        ctypes.CDLL(None).malloc_trim(0)


def make_model(hidden):
    layers = [torch.nn.Linear(IN_FEATURES, hidden), torch.nn.ReLU()]
    for _ in range(LAYERS - 2):
        layers += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(hidden, CLASSES))
    return torch.nn.Sequential(*layers)


def to_bytes(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


class Client:
    """One round's trainer. Its progress hook refers back to it, as trainers' callbacks do:
    a reference cycle, so its model, gradients and optimizer state go only when the cyclic
    garbage collector runs."""

    def __init__(self, payload, hidden, rng, history, on_send, steps, batch):
        self.model = make_model(hidden)
        self.model.load_state_dict(torch.load(io.BytesIO(payload)))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.rng = rng
        self.history = history
        self.seen = 0
        self.on_send = on_send
        self.steps = steps
        self.batch = batch
        self.model.register_forward_hook(self.on_forward)

    def on_forward(self, module, inputs, output):
        self.seen += output.shape[0]

    def train(self):
        loss_fn = torch.nn.CrossEntropyLoss()
        for _ in range(draw(self.rng, self.steps)):
            batch = draw(self.rng, self.batch)
            x = torch.from_numpy(
                np.random.standard_normal((batch, IN_FEATURES)).astype(np.float32))
            y = torch.from_numpy(np.random.randint(0, CLASSES, size=batch))
            self.opt.zero_grad()
            loss = loss_fn(self.model(x), y)
            loss.backward()
            self.opt.step()
            # Per-step metrics kept for the report: small survivors between big blocks.
            self.history.append((batch, float(loss), loss.detach().numpy().copy()))
        update = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        return self.send(to_bytes(update))

    def send(self, payload):
        # NVFlare's flare.send() releases its own references to the parameters and then runs
        # the cleanup, while the caller (this trainer) is still alive.
        if self.on_send:
            self.on_send()
        return payload


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--wait", action="store_true")
    ap.add_argument("--self-cleanup", nargs="?", const="send", choices=("send", "end"))
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int_range, default=(MIN_BATCH, MAX_BATCH))
    ap.add_argument("--steps", type=int_range, default=(STEPS, STEPS))
    ap.add_argument("--pause", type=seconds_range, default=(0.0, 0.0))
    ap.add_argument("--duration", type=float, default=0.0)
    ap.add_argument("--boundaries", action="store_true")
    args = ap.parse_args()
    if args.rounds < 1 or args.scale <= 0:
        ap.error("--rounds must be >= 1 and --scale > 0")

    torch.set_num_threads(2)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    rng = random.Random(args.seed)
    hidden = max(16, int(HIDDEN * args.scale))
    allocator = allocator_type() if args.self_cleanup else None

    def cleanup():
        self_cleanup(allocator)

    on_send = cleanup if args.self_cleanup == "send" else None

    server_state = {k: v.detach().clone() for k, v in make_model(hidden).state_dict().items()}
    history = []
    started = now_us()
    if args.boundaries:
        sys.stdout.write("start %d\n" % started)
        sys.stdout.flush()
    time.sleep(draw(rng, args.pause, uniform=True))
    for r in range(1, args.rounds + 1):
        if args.duration > 0 and now_us() - started >= args.duration * 1e6:
            break
        payload = to_bytes(server_state)
        client = Client(payload, hidden, rng, history, on_send, args.steps, args.batch)
        update = torch.load(io.BytesIO(client.train()))
        del client
        # The server averages the update in and keeps only the new state.
        server_state = {k: (server_state[k] + update[k]) / 2 for k in server_state}
        del payload, update
        if args.self_cleanup == "end":
            cleanup()
        if args.boundaries:
            sys.stdout.write("boundary %d %d\n" % (r, now_us()))
        sys.stdout.write("round %d rss_kib=%d\n" % (r, rss_kib()))
        sys.stdout.flush()
        if args.wait and not next_task():
            break
        time.sleep(draw(rng, args.pause, uniform=True))
    return 0


def next_task():
    """Waits for a line on stdin, polling every 10 ms; False at EOF."""
    while not select.select([sys.stdin], [], [], 0.01)[0]:
        pass
    return bool(sys.stdin.readline())


if __name__ == "__main__":
    sys.exit(main())
