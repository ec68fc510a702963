"""The host's speed on one fixed piece of CPU work, so that fresh-clone CI runs on different machines can be set
side by side (benchmarks/fresh_ci.sh writes this line first into its log; benchmarks/ci_phases.py prints it).

    python3 benchmarks/host_speed.py [--rounds 3]

The work, stdlib only and single-threaded: a pure-Python loop of 10,000,000 integer additions, zlib level 6 of
64 MiB of a repeating 4 KiB pseudo-random block, and SHA-256 of 256 MiB. Prints the smallest CPU time of the rounds
(time.process_time, seconds), less of it on a faster core: "host speed: 2.91 CPU-seconds for the reference work
(best of 3)". Load on the host raises it little (one thread; the best round is kept), a slower core or a loaded
hypervisor more.
"""

import argparse
import hashlib
import random
import time
import zlib


def reference_work():
    total = 0
    for i in range(10_000_000):
        total += i
    block = random.Random(0).randbytes(4096)
    zlib.compress(block * (64 * 256), 6)
    hashlib.sha256(bytes(256 << 20)).hexdigest()
    return total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    seconds = []
    for _ in range(args.rounds):
        start = time.process_time()
        reference_work()
        seconds.append(time.process_time() - start)
    print("host speed: %.2f CPU-seconds for the reference work (best of %d)" % (min(seconds), args.rounds))


if __name__ == "__main__":
    main()
