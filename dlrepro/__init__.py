"""dlrepro: re-run published deep-learning framework benchmarks in pinned containers.

Host-side library (Python >= 3.11): specs, image matrix, builds, executors, dataset
cache and result bundles. The in-container harness is the separate ``runner`` package.
"""

from pathlib import Path

__version__ = "0.1.0"

REPO_ROOT = Path(__file__).resolve().parent.parent
