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
pause, "boundary R T" at the end of round R, once its work is done and before any cleanup or
announcement, and "wait R T" as its pause begins (T: CLOCK_MONOTONIC microseconds).

For the time between rounds (none of these changes the default run either): --first-pause S
sleeps S seconds before the first round instead of a draw from --pause; --pause-in event waits
each pause in threading.Event().wait(timeout) instead of time.sleep: either way the main thread
sits in one blocking C call, where CPython runs no pending call. --gc-disabled calls gc.disable()
at the start, as training programs that collect by hand do (--self-cleanup's gc.collect() still
collects). --cycles MIB leaves MIB MiB of unreachable reference cycles each round: pairs of
objects that point at each other, each holding a bytearray of 1-4 KiB, which the round's trainer
keeps until it is dropped; only a collection frees them. --roundtrim-round calls roundtrim.round()
(scripts/python/roundtrim.py, on PYTHONPATH; the library preloaded) at the very end of each round,
where --self-cleanup=end cleans up. --call-cost N, after the rounds, times N calls of
roundtrim.round() in this process (ROUNDTRIM_AUTO=off, so that the calls are the only rounds,
and ROUNDTRIM_GC_ROUNDS=K, so that every K-th acts) and, after each acting call, NVFlare's cleanup
(gc.collect() + malloc_trim(0)); it prints "cost count S" or "cost act S" for each call,
"cost delay S" for each acting call (from the call's start to the end of its release, the
status's last_action_unix_time, on the realtime clock) and "cost nvflare S" for each cleanup (S:
seconds, time.perf_counter).
"""
import argparse
import ctypes
import gc
import io
import os
import random
import select
import sys
import threading
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


class Node:
    """One object of a round's cyclic garbage."""


def make_cycles(rng, mib):
    """Pairs of Nodes that point at each other, each with a bytearray of 1-4 KiB, MIB MiB in all;
    the list of one Node per pair is what keeps them reachable."""
    pairs, total = [], 0
    while total < mib << 20:
        a, b = Node(), Node()
        a.data, b.data = bytearray(rng.randint(1024, 4096)), bytearray(rng.randint(1024, 4096))
        a.peer, b.peer = b, a
        total += len(a.data) + len(b.data)
        pairs.append(a)
    return pairs


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

    def __init__(self, payload, hidden, rng, history, on_send, steps, batch, cycles):
        self.model = make_model(hidden)
        self.model.load_state_dict(torch.load(io.BytesIO(payload)))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.rng = rng
        self.history = history
        self.seen = 0
        self.on_send = on_send
        self.steps = steps
        self.batch = batch
        self.cycles = cycles
        self.scratch = None
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
        if self.cycles:
            # The round's caches: garbage once the trainer goes.
            self.scratch = self.cycles()
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
    ap.add_argument("--first-pause", type=float)
    ap.add_argument("--pause-in", choices=("sleep", "event"), default="sleep")
    ap.add_argument("--gc-disabled", action="store_true")
    ap.add_argument("--cycles", type=int, default=0)
    ap.add_argument("--roundtrim-round", action="store_true")
    ap.add_argument("--call-cost", type=int, default=0)
    args = ap.parse_args()
    if args.rounds < 1 or args.scale <= 0:
        ap.error("--rounds must be >= 1 and --scale > 0")
    if args.cycles < 0 or args.call_cost < 0 or (args.first_pause or 0) < 0:
        ap.error("--cycles, --call-cost and --first-pause must be >= 0")
    if args.gc_disabled:
        gc.disable()
    roundtrim = None
    if args.roundtrim_round or args.call_cost:
        import roundtrim
        if not roundtrim.loaded():
            ap.error("--roundtrim-round and --call-cost need libroundtrim.so preloaded")

    torch.set_num_threads(2)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    rng = random.Random(args.seed)
    hidden = max(16, int(HIDDEN * args.scale))
    allocator = allocator_type() if args.self_cleanup or args.call_cost else None

    def cleanup():
        self_cleanup(allocator)

    on_send = cleanup if args.self_cleanup == "send" else None
    cycles = None
    if args.cycles:
        cycles_rng = random.Random(args.seed)

        def cycles():
            return make_cycles(cycles_rng, args.cycles)

    if args.pause_in == "event":
        never_set = threading.Event()
        pause = never_set.wait
    else:
        pause = time.sleep

    server_state = {k: v.detach().clone() for k, v in make_model(hidden).state_dict().items()}
    history = []
    started = now_us()
    if args.boundaries:
        sys.stdout.write("start %d\n" % started)
        sys.stdout.flush()
    pause(draw(rng, args.pause, uniform=True) if args.first_pause is None else args.first_pause)
    for r in range(1, args.rounds + 1):
        if args.duration > 0 and now_us() - started >= args.duration * 1e6:
            break
        payload = to_bytes(server_state)
        client = Client(payload, hidden, rng, history, on_send, args.steps, args.batch, cycles)
        update = torch.load(io.BytesIO(client.train()))
        del client
        # The server averages the update in and keeps only the new state.
        server_state = {k: (server_state[k] + update[k]) / 2 for k in server_state}
        del payload, update
        ended = now_us()
        if args.self_cleanup == "end":
            cleanup()
        if args.roundtrim_round and not roundtrim.round():
            sys.exit("fl_client: roundtrim.round() did not count the round")
        if args.boundaries:
            sys.stdout.write("boundary %d %d\n" % (r, ended))
        sys.stdout.write("round %d rss_kib=%d\n" % (r, rss_kib()))
        sys.stdout.flush()
        if args.wait and not next_task():
            break
        seconds = draw(rng, args.pause, uniform=True)
        if args.boundaries and seconds > 0:
            sys.stdout.write("wait %d %d\n" % (r, now_us()))
            sys.stdout.flush()
        pause(seconds)
    if args.call_cost:
        call_cost(roundtrim, args.call_cost, cleanup)
    return 0


def call_cost(roundtrim, calls, cleanup):
    """Times roundtrim.round() calls and, after each that acts, NVFlare's cleanup; see above."""
    every = int(os.environ.get("ROUNDTRIM_GC_ROUNDS", "1"))
    if os.environ.get("ROUNDTRIM_AUTO") != "off" or every < 1:
        sys.exit("fl_client: --call-cost needs ROUNDTRIM_AUTO=off and ROUNDTRIM_GC_ROUNDS=K")
    actions = (roundtrim.status() or {}).get("actions", 0)
    for i in range(1, calls + 1):
        wall = time.time()
        start = time.perf_counter()
        roundtrim.round()
        took = time.perf_counter() - start
        acts = i % every == 0
        sys.stdout.write("cost %s %.9f\n" % ("act" if acts else "count", took))
        if acts:
            # The worker writes the call's record at its next look: let it come before the
            # next timing, whose thread it would otherwise compete with.
            actions += 1
            if not wait_for_actions(roundtrim, actions):
                sys.exit("fl_client: call %d acted, but the library reports no action" % i)
            released = roundtrim.status()["last_action_unix_time"]
            sys.stdout.write("cost delay %.9f\n" % (released - wall))
            start = time.perf_counter()
            cleanup()
            sys.stdout.write("cost nvflare %.9f\n" % (time.perf_counter() - start))
    sys.stdout.flush()


def wait_for_actions(roundtrim, actions, timeout=30.0):
    """Whether the library's status reaches ACTIONS actions within TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (roundtrim.status() or {}).get("actions", 0) >= actions:
            return True
        time.sleep(0.002)
    return False


def next_task():
    """Waits for a line on stdin, polling every 10 ms; False at EOF."""
    while not select.select([sys.stdin], [], [], 0.01)[0]:
        pass
    return bool(sys.stdin.readline())


if __name__ == "__main__":
    sys.exit(main())
