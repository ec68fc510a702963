"""The inputs: what a study, a spec, a reference, a dataset, a device peak or price is, read from the YAML
files of the repository and checked (the lowest layer above the helpers)."""
