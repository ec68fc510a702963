"""The loaded library of a framework read from the process maps (runner.environment), no engine needed."""

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
