"""The plan: what a host can test of a study (its hardware, the images and datasets each claim needs)."""
