#!/usr/bin/python3
"""fl_shape: a federated-learning client job shaped as NVFlare's client API job process, for round
detection: what happens between two rounds comes as bursts of their own, with quiet between.

Each round:
  1. the next model arrives: its bytes come in 1 MiB chunks, are joined and deserialised
     (torch.load); the chunks go, the state is kept;
  2. a hand-off pause (--handoff S: NVFlare takes about 0.47 s to give the model to the script);
  3. training: SGD steps of --batch samples on the model for a drawn number of seconds
     (--train MIN:MAX), so that the work scales with time, not with the machine's load;
  4. the update is serialised (torch.save) and sent in chunks; "boundary R T" is printed right
     after, where a client script's flare.send() returns; then, after --send-gap S, the result
     is acknowledged (a second, smaller burst: NVFlare's "task result sent");
  5. the client waits for its next task for a drawn time (--wait MIN:MAX), polling every --poll S
     with a small heartbeat (a few KiB allocated and freed).
"start T" is printed once the imports are done, before a start-up burst (--startup-mib MiB
allocated and freed, as the job's own set-up does) and the first arrival (T: CLOCK_MONOTONIC
microseconds). --model-mib sets the model's size (two square layers), --seed the draws.
"""
import argparse
import io
import random
import sys
import time

import torch


def now_us():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def seconds_range(text):
    lo, _, hi = text.partition(":")
    lo, hi = float(lo), float(hi or lo)
    if lo < 0 or hi < lo:
        raise argparse.ArgumentTypeError("want MIN:MAX with 0 <= MIN <= MAX")
    return lo, hi


def make_model(width):
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, 10))


def to_bytes(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def send(payload):
    """The update goes out in 1 MiB chunks, each copied into a frame."""
    sent = 0
    for off in range(0, len(payload), 1 << 20):
        frame = b"F" + payload[off:off + (1 << 20)]
        sent += len(frame)
    return sent


def arrive(payload):
    """The next model comes in 1 MiB chunks, is joined and deserialised."""
    chunks = [bytes(payload[off:off + (1 << 20)]) for off in range(0, len(payload), 1 << 20)]
    data = b"".join(chunks)
    del chunks
    return torch.load(io.BytesIO(data))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--model-mib", type=float, default=22.0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--train", type=seconds_range, default=(3.0, 8.0))
    ap.add_argument("--wait", type=seconds_range, default=(2.5, 5.0))
    ap.add_argument("--handoff", type=float, default=0.47)
    ap.add_argument("--send-gap", type=float, default=0.3)
    ap.add_argument("--poll", type=float, default=1.0)
    ap.add_argument("--startup-mib", type=int, default=64)
    args = ap.parse_args()
    if args.rounds < 1 or args.model_mib <= 0 or args.batch < 1 or args.poll <= 0:
        ap.error("--rounds, --model-mib, --batch and --poll must be positive")
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    width = max(16, int((args.model_mib * (1 << 20) / 4 / 2) ** 0.5))
    model = make_model(width)
    global_bytes = to_bytes(model.state_dict())
    sys.stdout.write("start %d\n" % now_us())
    sys.stdout.flush()
    setup = [bytearray(1 << 20) for _ in range(args.startup_mib)]
    del setup
    time.sleep(rng.uniform(*args.wait))
    loss_fn = torch.nn.CrossEntropyLoss()
    for r in range(1, args.rounds + 1):
        model.load_state_dict(arrive(global_bytes))
        time.sleep(args.handoff)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        until = time.monotonic() + rng.uniform(*args.train)
        while time.monotonic() < until:
            x = torch.randn(args.batch, width)
            y = torch.randint(0, 10, (args.batch,))
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        del opt
        update = to_bytes(model.state_dict())
        send(update)
        sys.stdout.write("boundary %d %d\n" % (r, now_us()))
        sys.stdout.flush()
        time.sleep(args.send_gap)
        ack = [bytearray(4096) for _ in range(256)]
        del ack
        # The server's next model: this round's update, as the only client's average.
        global_bytes = update
        del update
        waited = rng.uniform(*args.wait)
        while waited > 0:
            step = min(args.poll, waited)
            time.sleep(step)
            waited -= step
            beat = [bytearray(256) for _ in range(64)]
            del beat
    return 0


if __name__ == "__main__":
    sys.exit(main())
