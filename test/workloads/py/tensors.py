"""Keeps a growing list of tensors, for ROUNDTRIM_SITES: each line on stdin is one round, in
which it churns tensors it drops at once and keeps N more of 64 KiB (keep_tensors); then it
announces the round to the library (roundtrim_round) and prints "round N".

usage: tensors.py [N]"""
import ctypes
import sys

import torch

kept = []


def churn():
    for _ in range(64):
        t = torch.randn(16384)
        del t


def keep_tensors(n):
    for _ in range(n):
        kept.append(torch.ones(16384))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    announce = getattr(ctypes.CDLL(None), "roundtrim_round", None)
    print("ready", flush=True)
    for number, _ in enumerate(sys.stdin, 1):
        churn()
        keep_tensors(n)
        if announce:
            announce()
        print(f"round {number}", flush=True)


main()
