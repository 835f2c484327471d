"""record_nvflare.py: the Python half of test/tools/record-nvflare.sh, which records NVFlare's
processes for test/traces. Run by that script with NVFlare's source on PYTHONPATH; not by make.

  project IN OUT SITES          POC project.yml IN with SITES clients and the grpc scheme -> OUT
  job SRC DIR WIDTH SITES ROUNDS ARGS
                                hello-pt (NVFlare's source tree SRC) as a FedAvg job in DIR:
                                its model with hidden layers WIDTH wide, its client.py printing
                                the truth line after flare.send(), ARGS the client's arguments
  clock FILE                    writes "WALL_US MONOTONIC_US" read together, to map log times
  collect RAW WORKSPACE CLOCK OUT PREFIX SITES
                                from the recorder's files in RAW and the logs in WORKSPACE,
                                writes OUT/PREFIX_{server_job,server_parent,job_siteN,parent_siteN}
                                .trace and .truth (every other reading kept)
  live STATS PROCS WORKSPACE CLOCK SITES N [TRACES]
                                a run under the library instead (record-nvflare.sh --library):
                                per process (PROCS: "PID ARGS" lines), from its stats file
                                STATS/PID.jsonl, NVFlare's rounds (the truth below) and their
                                median length, the rounds the library found, those found before
                                NVFlare's first ended ("first"), NVFlare's rounds after whose
                                end it found none or more than one before the next ended, its
                                actions, those expected (N: the library's gc-rounds) and after
                                which of NVFlare's rounds each came; the library's readings in
                                TRACES/PID.trace (ROUNDTRIM_TRACE) become TRACES/ROLE.trace
                                with their truth TRACES/ROLE.truth

The truth ("start T", "boundary R T", CLOCK_MONOTONIC microseconds): a client's is what its
script printed right after each flare.send() (R: NVFlare's current_round + 1), the parent
client's is its site's; the server's is NVFlare's own log of the job (kept in the server's
jobs-storage once the job ends): round R ends at FedAvg's R-th "End persist model on server."
(aggregation done, the global model saved, the next round about to start), its wall-clock
time (local time, milliseconds) mapped through the CLOCK pair. "start" is the process's first
reading."""
import json
import os
import re
import sys
import time
import zipfile

TRUTH_RE = re.compile(r"roundtrim-truth boundary (\d+) (\d+)")
LOG_TIME_RE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")
ROUND_END = "End persist model on server."


def project(src, dst, sites):
    import yaml

    with open(src) as f:
        conf = yaml.safe_load(f)
    participants = [p for p in conf["participants"] if p.get("type") != "client"]
    org = next(p["org"] for p in conf["participants"] if p.get("type") == "server")
    for i in range(sites):
        participants.append({"name": f"site-{i + 1}", "org": org, "type": "client"})
    conf["participants"] = participants
    for builder in conf["builders"]:
        if builder["path"].endswith("StaticFileBuilder"):
            builder.setdefault("args", {})["scheme"] = "grpc"
    with open(dst, "w") as f:
        yaml.safe_dump(conf, f)


def patched(path, old, new):
    with open(path) as f:
        text = f.read()
    if text.count(old) != 1:
        sys.exit(f"record_nvflare: {path} no longer holds {old!r} once")
    return text.replace(old, new)


def job(src, out, width, sites, rounds, script_args):
    example = os.path.join(src, "examples", "hello-world", "hello-pt")
    os.makedirs(out, exist_ok=True)
    model = patched(
        os.path.join(example, "model.py"),
        "nn.Linear(16 * 5 * 5, 120)",
        "nn.Linear(16 * 5 * 5, WIDTH)",
    )
    model = model.replace("nn.Linear(120, 84)", "nn.Linear(WIDTH, WIDTH)").replace(
        "nn.Linear(84, 10)", "nn.Linear(WIDTH, 10)"
    )
    model = model.replace(
        "\n\nclass SimpleNetwork", f"\nWIDTH = {width}\n\n\nclass SimpleNetwork", 1
    )
    with open(os.path.join(out, "model.py"), "w") as f:
        f.write(model)
    send = "        flare.send(output_model)\n\n\nif __name__"
    truth = (
        "        flare.send(output_model)\n"
        '        print(f"roundtrim-truth boundary {input_model.current_round + 1} '
        '{time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}", flush=True)\n\n\nif __name__'
    )
    client = patched(os.path.join(example, "client.py"), send, truth)
    client = client.replace("import argparse\n", "import argparse\nimport time\n", 1)
    with open(os.path.join(out, "client.py"), "w") as f:
        f.write(client)

    os.chdir(out)
    sys.path.insert(0, out)
    from model import SimpleNetwork

    from nvflare.app_opt.pt.job_config.fed_avg import FedAvgJob
    from nvflare.job_config.script_runner import ScriptRunner

    net = SimpleNetwork()
    print(f"record_nvflare: model of {sum(p.numel() for p in net.parameters())} parameters")
    fed = FedAvgJob(name="hello-pt", n_clients=sites, num_rounds=rounds, initial_model=net)
    for i in range(sites):
        fed.to(ScriptRunner(script="client.py", script_args=script_args), f"site-{i + 1}")
    fed.export_job(os.path.join(out, "jobs"))


def clock(path):
    mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    wall = time.time_ns() // 1000
    mono = (mono + time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000) // 2
    with open(path, "w") as f:
        f.write(f"{wall} {mono}\n")


def read_trace(path):
    """The process line's words and the reading lines."""
    process, readings = None, []
    with open(path) as f:
        for line in f:
            if line.startswith("# process "):
                process = line.split()[2:]
            elif line and line[0].isdigit():
                readings.append(line)
    return process, readings


def write_trace(path, raw, label):
    """Every other reading (the first kept), the header, and the process line cut to its
    program and LABEL (readers take lines of a few hundred bytes; the rest is a token)."""
    kept, n = [], 0
    with open(raw) as f:
        for line in f:
            if line and line[0].isdigit():
                if n % 2 == 0:
                    kept.append(line)
                n += 1
            elif line.startswith("# process "):
                words = line.split()
                module = words.index("-m", 5) + 2 if "-m" in words[5:] else 5
                program = words[4:module]
                kept.append(" ".join(words[:4] + program + [f"({label})"]) + "\n")
            elif line.endswith("\n"):
                kept.append(line)
    with open(path, "w") as f:
        f.writelines(kept)
    return int(kept[-1].split()[0]) if kept else 0


def write_truth(path, start, boundaries):
    with open(path, "w") as f:
        f.write(f"start {start}\n")
        for r, t in boundaries:
            f.write(f"boundary {r} {t}\n")


def logs(workspace):
    """(path, lines) of every log.txt, those in the server's stored job workspaces (zip) too."""
    for root, _, files in os.walk(workspace):
        for name in files:
            path = os.path.join(root, name)
            if name == "log.txt":
                with open(path, errors="replace") as f:
                    yield path, f.readlines()
            elif name == "workspace" and zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as z:
                    if "log.txt" in z.namelist():
                        text = z.read("log.txt").decode(errors="replace")
                        yield path + ":log.txt", text.splitlines(keepends=True)


def log_time_us(line, offset_us):
    m = LOG_TIME_RE.match(line)
    if not m:
        return None
    wall = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
    return int(wall) * 1000000 + int(m.group(2)) * 1000 - offset_us


def role_of(cmd):
    """server_parent, server_job, parent_siteN or job_siteN from a process's command line, or
    None for any other process."""
    if "nvflare.private.fed.app.server.server_train" in cmd:
        return "server_parent"
    if "nvflare.private.fed.app.server.runner_process" in cmd:
        return "server_job"
    site = re.search(r"\b(site-\d+)\b", cmd)
    if not site:
        return None
    n = site.group(1).split("-")[1]
    if "nvflare.private.fed.app.client.client_train" in cmd:
        return f"parent_site{n}"
    if "nvflare.private.fed.app.client.worker_process" in cmd:
        return f"job_site{n}"
    return None


def read_offset(clock_file):
    """wall - monotonic, microseconds."""
    with open(clock_file) as f:
        wall, mono = (int(x) for x in f.read().split())
    return wall - mono


def truths(workspace, offset, sites):
    """The sites' truth from their scripts' lines; the server's from FedAvg's log."""
    site_truth = {}
    server_truth = []
    for log, lines in logs(workspace):
        found = [TRUTH_RE.search(line) for line in lines]
        found = [(int(m.group(1)), int(m.group(2))) for m in found if m]
        parts = log.split(os.sep)
        if found:
            site = next(p for p in parts if p.startswith("site-"))
            site_truth[site] = sorted(set(found))
        ends = [log_time_us(line, offset) for line in lines if ROUND_END in line]
        if len(ends) > len(server_truth):
            server_truth = list(enumerate(ends, 1))
    if len(site_truth) != sites or not server_truth:
        sys.exit(
            f"record_nvflare: truth for {sorted(site_truth)} and {len(server_truth)} server rounds"
        )
    return site_truth, server_truth


def collect(raw, workspace, clock_file, out, prefix, sites):
    site_truth, server_truth = truths(workspace, read_offset(clock_file), sites)

    roles = {}
    for name in sorted(os.listdir(raw)):
        path = os.path.join(raw, name)
        process, readings = read_trace(path)
        if not process or len(readings) < 20:
            continue
        role = role_of(" ".join(process[2:]))
        if not role:
            continue
        if role in roles:
            sys.exit(f"record_nvflare: two processes for {role}: {roles[role]} and {path}")
        roles[role] = path
    want = ["server_job", "server_parent"]
    want += [f"{kind}_site{i + 1}" for i in range(sites) for kind in ("job", "parent")]
    missing = [r for r in want if r not in roles]
    if missing:
        sys.exit(f"record_nvflare: no trace for {missing}")
    for role in want:
        name = os.path.join(out, f"{prefix}_{role}")
        start = int(read_trace(roles[role])[1][0].split()[0])
        write_trace(name + ".trace", roles[role], role)
        if role.startswith("server"):
            truth = server_truth
        else:
            truth = site_truth["site-" + role.rsplit("site", 1)[1]]
        write_truth(name + ".truth", start, truth)
        print(f"record_nvflare: {name}.trace from {roles[role]}, {len(truth)} boundaries")


def live_row(records, ends, offset, n):
    """The columns of one process's row after "NVFlare" (see live)."""
    gaps = sorted(b - a for a, b in zip(ends, ends[1:]))
    period = f"{gaps[len(gaps) // 2] / 1e6:.1f} s" if gaps else "-"

    def ended_before(record):
        """How many of NVFlare's rounds had ended when the library wrote RECORD."""
        return sum(t < record["unix_time"] * 1e6 - offset for t in ends)

    found = max((r["round"] for r in records), default=0)
    auto = [r for r in records if r.get("trigger") == "auto"]
    # The record of the Python steps' follow-up release (trigger python) is the same round's.
    acted = [r for r in records if r.get("action", "none") != "none" and r["trigger"] != "python"]
    # A round's end is found after it, before the next one ends: one detection after each of
    # NVFlare's round ends is right; one before the first ended is start-up's.
    after = [0] * (len(ends) + 1)
    for r in auto:
        after[ended_before(r)] += 1
    missed = sum(k == 0 for k in after[1:])
    doubled = sum(k > 1 for k in after[1:])
    falls = " ".join(str(ended_before(r)) for r in acted) or "-"
    return (
        f"{period:>7} {found:>5} {len(auto):>5} {after[0]:>5} {missed:>4} {doubled:>4}"
        f" {len(acted):>7} {len(ends) // n:>8}  {falls}"
    )


def live(stats, procs, workspace, clock_file, sites, n, traces=None):
    offset = read_offset(clock_file)
    site_truth, server_truth = truths(workspace, offset, sites)
    roles = {}
    with open(procs) as f:
        for line in f:
            pid, _, cmd = line.strip().partition(" ")
            role = role_of(cmd)
            if role and pid.isdigit():
                roles[int(pid)] = role
    want = ["server_job", "server_parent"]
    want += [f"{kind}_site{i + 1}" for i in range(sites) for kind in ("job", "parent")]
    rows = {}
    for name in sorted(os.listdir(stats)):
        m = re.fullmatch(r"(\d+)\.jsonl", name)
        if not m:
            continue
        pid = int(m.group(1))
        with open(os.path.join(stats, name)) as f:
            records = [json.loads(line) for line in f if line.strip()]
        rows[roles.get(pid, f"other pid {pid}")] = (pid, records)
    print(
        f"{'process':<15} {'pid':>7} {'NVFlare':>7} {'round':>7} {'found':>5} {'auto':>5}"
        f" {'first':>5} {'none':>4} {'2+':>4} {'actions':>7} {'expected':>8}"
        "  acted after NVFlare's round"
    )
    for role in want + sorted(r for r in rows if r not in want):
        pid, records = rows.get(role, (0, []))
        if role.startswith("server"):
            truth = server_truth
        elif role in want:
            truth = site_truth["site-" + role.rsplit("site", 1)[1]]
        else:
            truth = []
        ends = [t for _, t in truth]
        print(f"{role:<15} {pid or '-':>7} {len(ends):>7} {live_row(records, ends, offset, n)}")
        # The detector's own readings (ROUNDTRIM_TRACE), with NVFlare's rounds as their truth.
        trace = os.path.join(traces or "", f"{pid}.trace")
        if traces and pid and truth and os.path.exists(trace):
            name = os.path.join(traces, role)
            _, readings = read_trace(trace)
            if readings:
                os.replace(trace, name + ".trace")
                write_truth(name + ".truth", int(readings[0].split()[0]), truth)


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "project" and len(argv) == 5:
        project(argv[2], argv[3], int(argv[4]))
    elif cmd == "job" and len(argv) == 8:
        job(argv[2], argv[3], int(argv[4]), int(argv[5]), int(argv[6]), argv[7])
    elif cmd == "clock" and len(argv) == 3:
        clock(argv[2])
    elif cmd == "collect" and len(argv) == 8:
        collect(argv[2], argv[3], argv[4], argv[5], argv[6], int(argv[7]))
    elif cmd == "live" and len(argv) in (8, 9):
        live(argv[2], argv[3], argv[4], argv[5], int(argv[6]), int(argv[7]), *argv[8:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
