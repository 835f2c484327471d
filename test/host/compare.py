"""compare: the CPython regression runs of `make check-host`, plain against the library.

Usage: compare.py PLAIN_DIR LIBRARY_DIR...

Each directory holds one run of `python3 -m test`: junit.xml (regrtest's --junit-xml) and
regrtest.log (its output). Per test module it counts the test cases run, failed, in error and
skipped (from the XML), and takes the module's result from regrtest's own progress lines
(passed, failed, env changed, crashed, timed out, skipped). It prints one table with every run
side by side, then, for each library run, what differs from the plain run:

  - a test case that fails or errs under the library and passed or was skipped plainly;
  - a module whose number of test cases run (or skipped) differs;
  - a module whose result is worse: crashed, timed out, env changed or failed where the
    plain run was not.

It exits 1 when any library run has such a difference, 0 otherwise. It runs with the Python
that runs the tests, never under the library.
"""

import os
import re
import sys
import xml.etree.ElementTree as ET

# "0:06:18 load avg: 1.31 [32/41/1] test_socket crashed (Exit code 1) -- running: ..."
PROGRESS = re.compile(
    r"^\d+:\d\d:\d\d (?:load avg: [\d.]+ )?\[\s*\d+/\d+(?:/\d+)?\] (test_\w+) (.*)$"
)
DURATION = re.compile(r" \((?:\d+ (?:ms|sec|min|hour)\s*)+\)")

# From the best to the worst, as a library run may only keep or improve a module's result.
RANK = {
    "passed": 0,
    "skipped": 0,
    "resource-denied": 0,
    "no-tests": 0,
    "failed": 1,
    "env-changed": 2,
    "crashed": 3,
    "timed-out": 3,
    "interrupted": 3,
    "missing": 3,
}


def module_result(text):
    text = text.split(" -- running:")[0]
    text = DURATION.sub("", text).strip()
    if text.startswith("passed"):
        return "passed"
    if text.startswith("skipped (resource denied)"):
        return "resource-denied"
    if text.startswith("skipped"):
        return "skipped"
    if text.startswith("failed (env changed)"):
        return "env-changed"
    if text.startswith("failed"):
        return "failed"
    if text.startswith("crashed"):
        return "crashed"
    if text.startswith("timed out"):
        return "timed-out"
    if text.startswith("ran no tests"):
        return "no-tests"
    if text.startswith("interrupted"):
        return "interrupted"
    return text.split()[0] if text else "?"


def read_log(path):
    results = {}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = PROGRESS.match(line.rstrip("\n"))
                if m:
                    results[m.group(1)] = module_result(m.group(2))
    except OSError:
        pass
    return results


def case_module(name):
    parts = name.split(".")
    if len(parts) > 1 and parts[0] == "test" and parts[1].startswith("test_"):
        return parts[1]
    return None


def read_junit(path):
    """{module: {case name: 'ok' | 'skip' | 'fail' | 'error'}}"""
    modules = {}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return modules
    for suite in root.iter("testsuite"):
        cases = list(suite.iter("testcase"))
        names = [case_module(c.get("name", "")) for c in cases]
        known = [n for n in names if n]
        # Cases that name no module (a load failure) belong to the suite's module.
        suite_module = max(set(known), key=known.count) if known else "?"
        for case, module in zip(cases, names):
            outcome = "ok"
            if case.find("error") is not None:
                outcome = "error"
            elif case.find("failure") is not None:
                outcome = "fail"
            elif case.find("skipped") is not None:
                outcome = "skip"
            cases_of = modules.setdefault(module or suite_module, {})
            name = case.get("name", "?")
            # A name seen twice (subtests) keeps its worst outcome.
            order = ["ok", "skip", "fail", "error"]
            if name not in cases_of or order.index(outcome) > order.index(cases_of[name]):
                cases_of[name] = outcome
    return modules


class Run:
    def __init__(self, directory):
        self.name = os.path.basename(os.path.normpath(directory))
        self.cases = read_junit(os.path.join(directory, "junit.xml"))
        self.results = read_log(os.path.join(directory, "regrtest.log"))

    def counts(self, module):
        outcomes = list(self.cases.get(module, {}).values())
        return (
            len(outcomes),
            outcomes.count("fail"),
            outcomes.count("error"),
            outcomes.count("skip"),
        )

    def result(self, module):
        return self.results.get(module, "missing")

    def totals(self, modules):
        sums = [0, 0, 0, 0]
        for module in modules:
            for i, n in enumerate(self.counts(module)):
                sums[i] += n
        return sums


def differences(plain, lib, modules):
    found = []
    for module in modules:
        p_cases, l_cases = plain.cases.get(module, {}), lib.cases.get(module, {})
        p_run, _, _, p_skip = plain.counts(module)
        l_run, _, _, l_skip = lib.counts(module)
        if (p_run, p_skip) != (l_run, l_skip):
            found.append(
                f"{module}: {l_run} run, {l_skip} skipped (plain: {p_run} run, {p_skip} skipped)"
            )
        p_res, l_res = plain.result(module), lib.result(module)
        if RANK.get(l_res, 3) > RANK.get(p_res, 3):
            found.append(f"{module}: {l_res} (plain: {p_res})")
        for name, outcome in sorted(l_cases.items()):
            if outcome in ("fail", "error") and p_cases.get(name) not in ("fail", "error"):
                found.append(f"{name}: {outcome} (plain: {p_cases.get(name, 'not run')})")
        for name in sorted(set(p_cases) - set(l_cases)):
            if l_cases:
                found.append(f"{name}: not run (plain: {p_cases[name]})")
    return found


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    runs = [Run(d) for d in argv[1:]]
    plain, libs = runs[0], runs[1:]
    modules = sorted(set().union(*(set(r.cases) | set(r.results) for r in runs)) - {"?"})

    head = f"{'module':26}" + "".join(f" | {r.name:>29}" for r in runs)
    sub = f"{'':26}" + " | {:>5} {:>4} {:>4} {:>5} {:>8}".format(
        "run", "fail", "err", "skip", "result"
    ) * len(runs)
    print(head)
    print(sub)
    print("-" * len(sub))
    for module in modules:
        line = f"{module:26}"
        for r in runs:
            run, fail, err, skip = r.counts(module)
            line += f" | {run:5} {fail:4} {err:4} {skip:5} {r.result(module)[:8]:>8}"
        print(line)
    print("-" * len(sub))
    line = f"{'total':26}"
    for r in runs:
        run, fail, err, skip = r.totals(modules)
        line += f" | {run:5} {fail:4} {err:4} {skip:5} {'':>8}"
    print(line)

    status = 0
    for lib in libs:
        found = differences(plain, lib, modules)
        print()
        if not found:
            print(f"{lib.name}: no difference from {plain.name}")
            continue
        status = 1
        print(f"{lib.name}: {len(found)} difference(s) from {plain.name}:")
        for f in found:
            print(f"  {f}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
