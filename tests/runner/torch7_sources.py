"""What the Torch 7 tests share: the source archives in the image's build order, DLBench's specs."""

ARCHIVES = ("lua-paths", "lua-cwrap", "lua-torch7", "lua-moses", "lua-nn", "lua-optim")  # the image's build order
CUDA_ARCHIVES = ARCHIVES + ("lua-cutorch", "lua-cunn")  # the CUDA image's: the GPU packages after the CPU ones
DLBENCH = ("fcn", "alexnet", "resnet50", "resnet56", "lstm")
