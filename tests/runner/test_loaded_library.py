"""The libraries a framework build links, read from the process maps, a library's file name or ldd (runner.buildinfo),
no engine needed."""

from runner import buildinfo


def test_the_loaded_library_is_read_from_the_process_maps(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7f02-7f03 rw-p 00000000 00:00 0 \n"
        "7f04-7f05 r-xp 00000000 08:01 2 /opt/caffe/lib/libcaffe.so.1.0.0\n"
        "7f06-7f07 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89\n"
    )
    assert buildinfo.mapped_library("libcudart.so", str(maps)) == "/usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89"
    assert buildinfo.mapped_library("libcaffe.so", str(maps)) == "/opt/caffe/lib/libcaffe.so.1.0.0"
    assert buildinfo.mapped_library("libcublas.so", str(maps)) is None
    assert buildinfo.mapped_library("libc.so", str(tmp_path / "gone")) is None
    assert buildinfo.cuda_runtime(str(tmp_path / "no-such-library.so")) is None


def test_a_runtime_that_answers_only_with_a_driver_is_named_by_its_file(tmp_path):
    """CUDA 11's cudaRuntimeGetVersion answers only with a driver: the version comes from the file name, and says so."""
    cudart = tmp_path / "libcudart.so.11.8.89"
    cudart.write_bytes(b"not a loadable library")
    (tmp_path / "libcudart.so.11.0").symlink_to(cudart.name)
    assert buildinfo.linked_runtime(str(tmp_path / "libcudart.so.11.0")) == "11.8 (libcudart 11.8.89, file name)"
    assert buildinfo.linked_runtime(None) is None


def test_torch7_is_named_by_its_commit_and_its_cuda_by_the_runtime_cutorch_links(tmp_path, monkeypatch):
    """Lua Torch 7 (no Python package, no version of its own): the libraries under its prefix are scanned, its
    version is its torch7 commit's LuaRocks name, its CUDA the libcudart that libTHC.so links (ldd)."""
    lib = tmp_path / "lib"
    (lib / "lua" / "5.1").mkdir(parents=True)
    (lib / "libTHC.so").write_bytes(b"")
    (tmp_path / "libcudart.so.11.8.89").write_bytes(b"")
    monkeypatch.setattr(buildinfo, "TORCH7_PREFIX", str(tmp_path))
    monkeypatch.setitem(buildinfo.LIBRARY_DIRS, "torch7", [str(lib), str(tmp_path / "absent")])
    monkeypatch.setattr(
        buildinfo, "torch7_sources", lambda: {"torch7": "814ea4afd6beb110705d2456de03876841fcf1fd 9f3e"}
    )
    ldd = "\tlibcudart.so.11.0 => %s (0x00007f)\n\tlibTH.so.0 => not found\n" % (tmp_path / "libcudart.so.11.8.89")
    monkeypatch.setattr(buildinfo, "_run", lambda command: (0, ldd) if command[0] == "ldd" else (1, ""))
    assert buildinfo.package_dirs("torch7") == [str(lib)]
    assert buildinfo._torch7() == {
        "framework_version": "scm-814ea4a",
        "cuda": "11.8 (libcudart 11.8.89, file name)",
        "cudnn": "not linked",
        "nccl": "not linked",
        "archs": None,
        "library": str(lib / "libTHC.so"),
    }
    # nvcc's default, and cutorch's build in its image: the runtime linked statically; CUDA's release is then that of
    # the CUDA libraries it links, as Debian versions them
    cublas = tmp_path / "libcublas.so.11.11.3.6"
    cublas.write_bytes(b"")
    answers = {
        "ldd": (0, "\tlibcublas.so.11 => %s (0x00007f)\n" % cublas),
        "dpkg-query -S": (0, "libcublas11:amd64: %s\n" % cublas),
        "dpkg-query -W": (0, "11.11.3.6~11.8.0-5~deb12u1"),
    }
    monkeypatch.setattr(buildinfo, "_run", lambda command: answers.get(" ".join(command[:2]), answers.get(command[0])))
    assert buildinfo._torch7()["cuda"] == (
        "11.8 (Debian's libcublas11 11.11.3.6~11.8.0-5~deb12u1), runtime linked statically"
    )
    answers["dpkg-query -S"] = (1, "dpkg-query: no path found matching pattern")
    assert buildinfo._torch7()["cuda"] is None
    (lib / "libTHC.so").unlink()  # the CPU image: no cutorch
    assert buildinfo._torch7()["cuda"] is None and buildinfo._torch7()["library"] is None
