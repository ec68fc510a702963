"""The GPUs the GPU-run tests fake."""

H200 = {"index": 0, "name": "NVIDIA H200", "driver": "580.95.05", "capability": "9.0", "memory_bytes": 150 * 2**30}
