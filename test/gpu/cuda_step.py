#!/usr/bin/env python3
"""cuda_step.py LIBRARY [OUT_DIR]: the CUDA step of roundtrim(7) on a real GPU (make check-cuda).

Each case starts a Python program that uses PyTorch, with LIBRARY preloaded in that program
alone, announces a round through its FIFO and reads the device's memory as the driver reports it
(nvidia-smi), beside what the program's torch reports. The cases:

  control       no library: 4 GiB freed by the program stay in PyTorch's cache (the proof that
                the other cases measure the library)
  busy          ROUNDTRIM_CUDA_EMPTY_CACHE=true, the main thread runs bytecode: its queued call
                empties the cache
  off           the option unset: nothing is emptied
  waiting       =waiting, the main thread waits in a read: the library's thread empties the
                cache (one visible device, its context there), before the read returns
  untouched     =waiting, torch imported, CUDA never used: no context is created on the device
  between       =waiting, a client that trains a fresh model each round on the GPU, leaves it
                in reference cycles and waits 3 s in time.sleep: the device's memory 1.5 s into
                each wait with the library (the program announces the round through the FIFO)
                against the same program calling NVFlare's cleanup (gc.collect(),
                empty_cache()) at the round's end, and against no cleanup; goal <= 1.00
  capture       =true, a thread of the program's captures CUDA graphs in a loop (global
                capture mode, PyTorch's default; each old graph deleted, so its memory pool is
                freeable) while the main thread waits in a read and rounds come: the library's
                thread collects and leaves the cache, and no capture fails (with the native
                allocator and with backend:cudaMallocAsync; with =waiting the library's
                emptying invalidated the cudaMallocAsync capture and the program terminated)
  exits         =waiting, EXITS programs announce a round and exit while the library's thread
                empties their cache or collects, or just before or after: each exits with its
                own status, in time, and says nothing on stderr

CUDA_STEP_CASES=a,b runs those cases alone. Exits 0 when every case holds, 1 when one does not,
77 (skipped) where torch sees no CUDA device.
Prints one line per case and writes them as JSON lines to OUT_DIR/cuda_step.jsonl when given.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

GIB = 1 << 30
FREED = 4 * GIB
# A case's waits: far beyond the worker's 200 ms look at its FIFO and the library's grace.
DEADLINE_S = 20.0
# How long an empty cache must stay full, where nothing should empty it.
KEPT_S = 3.0


def child(mode):
    """The program under test. Prints one line at a time; the driver answers on stdin."""
    import torch

    def say(text):
        os.write(1, (text + "\n").encode())

    if mode == "exit":
        # The round from the program itself, then an exit at a random point of the grace,
        # the library thread's steps or after them.
        torch.empty(GIB, dtype=torch.uint8, device="cuda").fill_(1)
        torch.cuda.synchronize()
        fifo = os.environ["ROUNDTRIM_FIFO"].replace("%p", str(os.getpid()))
        wait_for(lambda: os.path.exists(fifo), "the FIFO " + fifo)
        with open(fifo, "w") as f:
            f.write("round\n")
        time.sleep(float(sys.argv[3]))
        sys.exit(3)
    if mode == "between":
        between(torch, sys.argv[3])
        return
    if mode == "capture":
        capture(torch)
        return
    if mode == "untouched":
        say("ready")
        sys.stdin.readline()
        say("initialized=%s context=%d" % (torch.cuda.is_initialized(), primary_context()))
        sys.stdin.readline()
        return
    block = torch.empty(FREED, dtype=torch.uint8, device="cuda")
    block.fill_(1)
    torch.cuda.synchronize()
    del block
    say("ready reserved=%d" % torch.cuda.memory_reserved())
    if mode == "busy":
        # Bytecode all along: a sleep of 1 ms comes back to it a thousand times a second.
        end = time.monotonic() + float(sys.argv[3])
        while torch.cuda.memory_reserved() > 0 and time.monotonic() < end:
            time.sleep(0.001)
        say("at=%.6f reserved=%d" % (time.monotonic(), torch.cuda.memory_reserved()))
    else:
        sys.stdin.readline()
        say("reserved=%d context=%d" % (torch.cuda.memory_reserved(), primary_context()))
    sys.stdin.readline()


BETWEEN_ROUNDS = 3
CAPTURE_ROUNDS = 6
CAPTURE_GAP_S = 0.7


def capture(torch):
    import threading

    x = torch.ones(1 << 20, device="cuda")
    block = torch.empty(GIB, dtype=torch.uint8, device="cuda")
    del block
    torch.cuda.synchronize()
    done, errors = [0], []
    end = time.monotonic() + CAPTURE_ROUNDS * CAPTURE_GAP_S + 1.0

    def capturer():
        try:
            while time.monotonic() < end:
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = x
                    for _ in range(300):
                        y = y * 1.0001
                g.replay()
                done[0] += 1
                del g, y
        except Exception as error:  # what the program would die of
            errors.append(repr(error).replace("\n", " ")[:240])
        # Said by this thread once it captures no more: the main thread, still in its read,
        # then takes the CUDA step it is owed with no capture under way.
        os.write(1, ("captures=%d error=%s\n" % (done[0], errors[0] if errors else "none"))
                 .encode())

    t = threading.Thread(target=capturer)
    t.start()
    os.write(1, b"ready\n")
    sys.stdin.readline()
    t.join()


def between(torch, cleanup):
    """A client's rounds: a fresh model from the "server", training, its update kept, the
    model and optimizer left in reference cycles (only a collection frees them), then a wait."""
    import gc

    nn = torch.nn
    fifo = os.environ.get("ROUNDTRIM_FIFO", "").replace("%p", str(os.getpid()))
    for r in range(BETWEEN_ROUNDS):
        model = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096),
                              nn.ReLU(), nn.Linear(4096, 1024)).cuda()
        opt = torch.optim.Adam(model.parameters())
        for _ in range(20):
            x = torch.randn(512, 4096, device="cuda")
            loss = model(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        update = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        model.owner = opt
        opt.owner = model
        del model, opt, x, loss, update
        torch.cuda.synchronize()
        if cleanup == "nvflare":
            gc.collect()
            torch.cuda.empty_cache()
        elif cleanup == "library":
            with open(fifo, "w") as f:
                f.write("round\n")
        os.write(1, b"waiting\n")
        time.sleep(3)


def primary_context():
    """Whether device 0's primary context is active, as the driver says (creates none)."""
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return -1
    flags, active = ctypes.c_uint(), ctypes.c_int()
    if cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxGetState(0, ctypes.byref(flags),
                                                              ctypes.byref(active)) != 0:
        return -1
    return active.value


def device_used_mib():
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                          "-i", "0"], capture_output=True, text=True, timeout=30)
    return int(out.stdout.split()[0])


class Program:
    def __init__(self, tmp, mode, library, option, arg=DEADLINE_S, more=None):
        env = dict(os.environ, **(more or {}))
        for name in list(env):
            if name.startswith(("ROUNDTRIM_", "NVFLARE_")) or name == "LD_PRELOAD":
                del env[name]
        if library:
            env.update(LD_PRELOAD=library, ROUNDTRIM_FIFO=tmp + "/%p.fifo",
                       ROUNDTRIM_STATS=tmp + "/%p.jsonl", ROUNDTRIM_AUTO="off",
                       ROUNDTRIM_GC_ROUNDS="1")
            if option:
                env["ROUNDTRIM_CUDA_EMPTY_CACHE"] = option
        self.proc = subprocess.Popen([sys.executable, __file__, "--child", mode, str(arg)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     text=True, bufsize=1)
        self.fifo = "%s/%d.fifo" % (tmp, self.proc.pid)
        self.stats = "%s/%d.jsonl" % (tmp, self.proc.pid)
        self.library = library

    def line(self):
        text = self.proc.stdout.readline().strip()
        if not text:
            raise RuntimeError("the program ended: status %s" % self.proc.wait(timeout=30))
        return text

    def round(self):
        """Announces a round; returns when the library took it, with the time it was written."""
        wait_for(lambda: os.path.exists(self.fifo), "the FIFO " + self.fifo)
        self.sent_unix = time.time()
        at = time.monotonic()
        with open(self.fifo, "w") as fifo:
            fifo.write("round\n")
        return at

    def steps(self):
        """The record of the Python steps that served round 1."""
        found = []

        def look():
            try:
                with open(self.stats) as f:
                    found[:] = [json.loads(l) for l in f if '"trigger":"python"' in l]
            except FileNotFoundError:
                pass
            return found

        wait_for(look, "the record of the steps in " + self.stats)
        return found[0]

    def answer(self, text="\n"):
        self.proc.stdin.write(text)
        return self.line()

    def end(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        return self.proc.wait(timeout=60)


def in_read(pid):
    """Whether the program's main thread sits in read(2) (system call 0 on x86_64)."""
    try:
        with open("/proc/%d/task/%d/syscall" % (pid, pid)) as f:
            return f.read().split()[0] == "0"
    except (OSError, IndexError):
        return False


def wait_for(condition, what):
    end = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > end:
            raise RuntimeError("no " + what + " within %.0f s" % DEADLINE_S)
        time.sleep(0.01)


def field(text, name):
    return dict(word.split("=", 1) for word in text.split() if "=" in word)[name]


def case_control(tmp, library):
    p = Program(tmp, "busy", None, False, KEPT_S)
    ready = p.line()
    after = p.answer("")
    used = device_used_mib()
    status = p.end()
    kept = int(field(after, "reserved"))
    return kept >= FREED and status == 0, dict(
        reserved_before=int(field(ready, "reserved")), reserved_after=kept, device_mib=used)


def case_busy(tmp, library):
    p = Program(tmp, "busy", library, "true")
    ready = p.line()
    before = device_used_mib()
    sent = p.round()
    after = p.line()
    record = p.steps()
    used = device_used_mib()
    p.proc.stdin.write("\n")
    status = p.end()
    reserved = int(field(after, "reserved"))
    ms = (float(field(after, "at")) - sent) * 1000
    return (reserved == 0 and record["cuda"] == "emptied" and before - used >= (FREED >> 20) * 7 // 8
            and status == 0), dict(reserved_before=int(field(ready, "reserved")),
                                   reserved_after=reserved, emptied_after_ms=round(ms, 1),
                                   device_mib_before=before, device_mib_after=used,
                                   cuda=record["cuda"])


def case_off(tmp, library):
    p = Program(tmp, "busy", library, False, KEPT_S)
    p.line()
    p.round()
    record = p.steps()
    after = p.line()
    p.proc.stdin.write("\n")
    status = p.end()
    kept = int(field(after, "reserved"))
    return kept >= FREED and record["cuda"] == "off" and status == 0, dict(
        reserved_after=kept, cuda=record["cuda"])


def announce(p):
    """A round for a program that waits in its read: the device's memory before it and once
    its steps are recorded (the program still in its read), and the steps' record."""
    before = device_used_mib()
    p.round()
    record = p.steps()
    return before, record, device_used_mib()


def case_waiting(tmp, library):
    p = Program(tmp, "waiting", library, "waiting")
    p.line()
    before, record, during = announce(p)
    after = p.answer()
    status = p.end()
    reserved = int(field(after, "reserved"))
    freed_mib = before - during
    return (record["cuda"] == "emptied" and freed_mib >= (FREED >> 20) * 7 // 8 and
            reserved == 0 and status == 0), dict(
        device_mib_before=before, device_mib_while_waiting=during, cuda=record["cuda"],
        steps_after_ms=round((record["unix_time"] - p.sent_unix) * 1000, 1),
        gc_collected=record["gc_collected"], reserved_after_wake=reserved,
        context=int(field(after, "context")))


def case_untouched(tmp, library):
    p = Program(tmp, "untouched", library, "waiting")
    p.line()
    before, record, during = announce(p)
    after = p.answer()
    p.proc.stdin.write("\n")
    status = p.end()
    return (field(after, "initialized") == "False" and field(after, "context") == "0" and
            record["cuda"] in ("not-initialized", "main-thread-only") and
            during - before < 64 and status == 0), dict(
        device_mib_before=before, device_mib_after=during, cuda=record["cuda"],
        seen=after)


def case_between(tmp, library):
    used = {}
    for cleanup in ("none", "nvflare", "library"):
        p = Program(tmp, "between", library if cleanup == "library" else None, "waiting",
                    cleanup)
        samples = []
        for _ in range(BETWEEN_ROUNDS):
            p.line()
            time.sleep(1.5)  # a point inside the 3 s wait, as figure 9 of make bench reads RSS
            samples.append(device_used_mib())
        status = p.end()
        if status != 0:
            raise RuntimeError("%s: status %d" % (cleanup, status))
        used[cleanup] = samples
    ratio = max(l / n for l, n in zip(used["library"], used["nvflare"]))
    return ratio <= 1.0, dict(device_mib_in_the_wait=used, library_over_nvflare_max=round(ratio, 3),
                              none_over_nvflare_max=round(max(
                                  a / n for a, n in zip(used["none"], used["nvflare"])), 3))


def case_capture(tmp, library):
    seen, ok = {}, True
    for backend in ("native", "cudaMallocAsync"):
        more = {} if backend == "native" else {"PYTORCH_CUDA_ALLOC_CONF": "backend:" + backend}
        p = Program(tmp, "capture", library, "true", more=more)
        p.line()
        # Every round while the main thread reads: none of its queued calls runs during them.
        wait_for(lambda: in_read(p.proc.pid), "main thread in its read")
        for _ in range(CAPTURE_ROUNDS):
            p.round()
            time.sleep(CAPTURE_GAP_S)  # rounds at the pace of a storm, while the captures go on
        after = p.line()
        p.proc.stdin.write("\n")
        status = p.end()
        with open(p.stats) as f:
            cuda = [json.loads(l)["cuda"] for l in f if '"trigger":"python"' in l]
        error = after.split("error=", 1)[1]
        seen[backend] = dict(captures=int(field(after, "captures")), error=error, cuda=cuda,
                             status=status)
        ok = ok and error == "none" and status == 0 and "main-thread-only" in cuda
    return ok, seen


EXITS = 96
EXITS_AT_ONCE = 8


def case_exits(tmp, library):
    import random

    rng = random.Random(24)
    statuses, noisy, steps_seen, slowest = {}, [], 0, 0.0
    pending = list(range(EXITS))
    running = []
    while pending or running:
        while pending and len(running) < EXITS_AT_ONCE:
            i = pending.pop()
            env = dict(os.environ, LD_PRELOAD=library, ROUNDTRIM_FIFO=tmp + "/%p.fifo",
                       ROUNDTRIM_STATS=tmp + "/%p.jsonl", ROUNDTRIM_AUTO="off",
                       ROUNDTRIM_GC_ROUNDS="1", ROUNDTRIM_CUDA_EMPTY_CACHE="waiting")
            # The FIFO must exist before the program writes it: it does once the library
            # started, long before torch is imported.
            proc = subprocess.Popen([sys.executable, __file__, "--child", "exit",
                                     "%.3f" % rng.uniform(0.05, 0.6)], env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            running.append((proc, time.monotonic()))
        proc, started = running.pop(0)
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            err += " (killed: no exit within 120 s)"
        slowest = max(slowest, time.monotonic() - started)
        statuses[proc.returncode] = statuses.get(proc.returncode, 0) + 1
        if err.strip():
            noisy.append(err.strip()[-300:])
        try:
            with open("%s/%d.jsonl" % (tmp, proc.pid)) as f:
                steps_seen += any('"trigger":"python"' in l for l in f)
        except FileNotFoundError:
            pass
    return statuses == {3: EXITS} and not noisy, dict(
        exits=EXITS, statuses={str(k): v for k, v in statuses.items()},
        steps_recorded=steps_seen, slowest_s=round(slowest, 1), stderr=noisy[:3])


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return 0
    if len(sys.argv) < 2:
        print(__doc__.split("\n")[0], file=sys.stderr)
        return 2
    library = os.path.abspath(sys.argv[1])
    out_dir = sys.argv[2] if len(sys.argv) > 2 else None
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
    if probe.stdout.strip() != "True":
        print("cuda_step: skipped: this python's torch sees no CUDA device")
        return 77
    cases = [case_control, case_busy, case_off, case_waiting, case_untouched, case_between, case_capture, case_exits]
    only = os.environ.get("CUDA_STEP_CASES")
    if only:
        cases = [c for c in cases if c.__name__[len("case_"):] in only.split(",")]
    failed = 0
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            name = case.__name__[len("case_"):]
            try:
                ok, seen = case(tmp, library)
            except Exception as error:  # one case's failure must not hide the others
                ok, seen = False, dict(error=str(error))
            failed += not ok
            line = dict(case=name, ok=ok, **seen)
            lines.append(line)
            print(("ok   " if ok else "FAIL ") + json.dumps(line), flush=True)
    if out_dir:
        with open(os.path.join(out_dir, "cuda_step.jsonl"), "w") as f:
            f.writelines(json.dumps(line) + "\n" for line in lines)
    print("cuda_step: %d of %d cases hold" % (len(cases) - failed, len(cases)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
