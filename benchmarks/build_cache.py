"""Seconds for `invoke build` of the torch CPU image when its tag exists (the cache-hit path).

    python benchmarks/build_cache.py [--times N]

The first call may build (minutes); every later call must find the content-hashed tag and
build nothing. Prints each call's seconds and whether it built.
"""

import argparse
import time

from dlrepro.images import build
from dlrepro.images import matrix as matrixmod


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=3)
    args = parser.parse_args()
    m = matrixmod.load()
    image = m.find("torch", "cpu")
    for i in range(args.times):
        start = time.monotonic()
        built = build.ensure(m, image, build.BuildOptions(), log=lambda msg: None)
        print(
            "call %d: %6.2f s  %s  %s"
            % (i + 1, time.monotonic() - start, built.tag, "built" if built.built else "cache hit")
        )


if __name__ == "__main__":
    main()
