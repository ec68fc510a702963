"""What the Torch 7 tests share: the source archives in the image's build order, DLBench's specs, and the skip where
the archives are not in the dataset cache."""

import pytest

from dlrepro.inputs import datasets

ARCHIVES = ("lua-paths", "lua-cwrap", "lua-torch7", "lua-moses", "lua-nn", "lua-optim")  # the image's build order
CUDA_ARCHIVES = ARCHIVES + ("lua-cutorch", "lua-cunn")  # the CUDA image's: the GPU packages after the CPU ones
DLBENCH = ("fcn", "alexnet", "resnet50", "resnet56", "lstm")


def sources_or_skip(names=ARCHIVES):
    """{dataset: DatasetRecord} of the source archives ``names`` in the dataset cache; skips the test with the reason
    where one is absent, as a run skips a job whose dataset is missing."""
    absent = [name for name in names if datasets.missing(name)]
    if absent:
        pytest.skip(
            "Torch 7's source archives %s are not in the dataset cache: `dlrepro datasets.fetch NAME` (or "
            "--from FOLDER, archives made with git archive as dlrepro/inputs/datasets.yaml says)" % ", ".join(absent)
        )
    return {name: datasets.ensure(name, log=lambda line: None) for name in names}
