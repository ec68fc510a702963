"""Bad specs get one line per problem naming file, line and field."""

import pytest

from dlrepro import REPO_ROOT
from dlrepro.errors import SpecError
from dlrepro.inputs import spec
from tests.helpers import dlrepro_here

ALEXNET = (REPO_ROOT / "specs" / "alexnet.yaml").read_text()


def load_variant(tmp_path, text, name="alexnet"):
    path = tmp_path / ("%s.yaml" % name)
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        spec.load(str(path))
    return path, err.value.problems


def test_unknown_field(tmp_path):
    path, problems = load_variant(tmp_path, ALEXNET.replace("    warmup: 8\n", "    warmup: 8\n    warm_up: 8\n", 1))
    assert len(problems) == 1
    assert problems[0].startswith("%s:" % path)
    assert "variants.alexnet-s.warm_up: unknown field 'warm_up'; expected one of:" in problems[0]
    assert "warmup" in problems[0].split("expected one of:")[1]


def test_wrong_type_names_line_and_field(tmp_path):
    text = ALEXNET.replace("cpu: [16] ", "cpu: [sixteen] ")
    path, problems = load_variant(tmp_path, text)
    line = [i for i, row in enumerate(text.splitlines(), 1) if "[sixteen]" in row][0]
    assert problems == [
        "%s:%d: variants.alexnet-s.batch_sizes.cpu.0: Input should be a valid integer, unable to "
        "parse string as an integer (got 'sixteen')" % (path, line)
    ]


def test_unknown_model(tmp_path):
    _, problems = load_variant(tmp_path, ALEXNET.replace("model: alexnet-r\n", "model: alexnet-z\n"))
    assert (
        len(problems) == 1
        and "variants.alexnet-r.model: unknown model 'alexnet-z'; the file defines: alexnet-r, alexnet-s" in problems[0]
    )


def test_unknown_layer_type(tmp_path):
    _, problems = load_variant(
        tmp_path, ALEXNET.replace("{type: conv, filters: 96,", "{type: convolution, filters: 96,")
    )
    assert len(problems) == 1 and "models.alexnet-s.layers.0: Input tag 'convolution'" in problems[0]


def test_stated_parameter_count_is_checked_against_the_layers(tmp_path):
    text = ALEXNET.replace("parameters: 62378344", "parameters: 62378343")
    path, problems = load_variant(tmp_path, text)
    line = text.splitlines().index("    parameters: 62378343") + 1
    assert problems == [
        "%s:%d: models.alexnet-s.parameters: the layers have 62,378,344 parameters but the spec "
        "states 62,378,343" % (path, line)
    ]


def test_a_framework_without_adapter(tmp_path):
    _, problems = load_variant(tmp_path, ALEXNET.replace("frameworks: [torch,", "frameworks: [theano, torch,"))
    assert len(problems) == 1
    assert (
        ":5: frameworks: no runner adapter for 'theano' (did you mean keras-theano?); runner/adapters has: "
        "caffe, caffe2, chainer, cntk, jax, keras-cntk, keras-jax, keras-tensorflow, keras-theano, keras-torch, "
        "mxnet, tensorflow, torch"
    ) in problems[0]


def test_name_must_match_file(tmp_path):
    path, problems = load_variant(tmp_path, ALEXNET, name="other")
    assert problems == ["%s:1: name: name 'alexnet' must equal the file name 'other'" % path]


def test_invalid_yaml(tmp_path):
    path, problems = load_variant(tmp_path, ALEXNET.replace("frameworks: [torch,", "frameworks: [[torch,"))
    assert problems[0].startswith("%s:" % path) and "not valid YAML" in problems[0]


def test_cli_prints_one_line_and_exits_2(tmp_path):
    path = tmp_path / "alexnet.yaml"
    path.write_text(ALEXNET.replace("cpu: [16] ", "cpu: [sixteen] "))
    proc = dlrepro_here("run", "--spec", str(path), "--executor", "local")
    assert proc.returncode == 2
    lines = [row for row in proc.stdout.splitlines() if row.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: %s:" % path) and "batch_sizes.cpu.0" in lines[0]


def test_cli_rejects_a_bad_option():
    proc = dlrepro_here("run", "--spec", "alexnet", "--device", "gpu")
    assert proc.returncode == 2 and "--device: Input should be 'cpu' or 'cuda' (got 'gpu')" in proc.stdout


IMDB = (REPO_ROOT / "specs" / "imdb-gru.yaml").read_text()


def test_token_settings_must_fit_the_model(tmp_path):
    text = IMDB.replace("tokens: {vocab: 30000, maxlen: 150}", "tokens: {vocab: 20000, maxlen: 100}")
    path, problems = load_variant(tmp_path, text, name="imdb-gru")
    line = [i for i, row in enumerate(text.splitlines(), 1) if "vocab: 20000" in row][0]
    assert problems == [
        "%s:%d: variants.imdb-gru.data.tokens.vocab: 20000 ids, but model gru embeds 30000" % (path, line),
        "%s:%d: variants.imdb-gru.data.tokens.maxlen: 100, but model gru reads 150 steps" % (path, line),
    ]
    _, problems = load_variant(tmp_path, IMDB.replace(", tokens: {vocab: 30000, maxlen: 150}", ""), name="imdb-gru")
    assert problems[0].endswith("variants.imdb-gru.data: dataset imdb needs tokens: {vocab, maxlen}")


def test_data_must_suit_the_mode(tmp_path):
    text = ALEXNET.replace(
        "    model: alexnet-s\n", "    model: alexnet-s\n    mode: convergence\n    convergence: {epochs: 1}\n"
    )
    _, problems = load_variant(tmp_path, text)
    assert len(problems) == 1 and "variants.alexnet-s.data: mode convergence trains on a dataset" in problems[0]
    text = ALEXNET.replace(
        "data: {kind: dataset, name: cifar10, subtract_mean: pixel}",
        "data: {kind: dataset, name: imdb, tokens: {vocab: 30000}}",
    )
    _, problems = load_variant(tmp_path, text)
    assert len(problems) == 1 and problems[0].endswith(
        "variants.alexnet-r.data: dataset imdb gives token ids, model alexnet-r takes dense input"
    )


def test_a_bad_input_shape_names_its_line_and_field(tmp_path):
    text = ALEXNET.replace("input_shape: [3, 224, 224]", "input_shape: [3, 224, zero]", 1)
    path, problems = load_variant(tmp_path, text)
    line = [i for i, row in enumerate(text.splitlines(), 1) if "[3, 224, zero]" in row][0]
    assert problems == [
        "%s:%d: models.alexnet-s.input_shape.2: Input should be a valid integer, unable to parse "
        "string as an integer (got 'zero')" % (path, line)
    ]


def test_a_duplicate_key_is_refused_with_its_line(tmp_path):
    text = ALEXNET.replace("optimizer: {name: sgd, lr: 0.01}", "optimizer: {name: sgd, lr: 0.01, lr: 5.0}", 1)
    path, problems = load_variant(tmp_path, text)
    line = [i for i, row in enumerate(text.splitlines(), 1) if "lr: 5.0" in row][0]
    assert len(problems) == 1 and problems[0].startswith("%s:%d: duplicate key 'lr'" % (path, line))


def test_every_yaml_file_of_the_suite_refuses_duplicate_keys(tmp_path):
    from dlrepro.images import matrix
    from dlrepro.inputs import datasets

    for source, loader in ((matrix.MATRIX_FILE, matrix.load), (datasets.CATALOGUE, datasets.yamlfile.load)):
        text = source.read_text()
        first = [
            row for row in text.splitlines() if row.startswith("  ") and ":" in row and not row.strip().startswith("#")
        ][0]
        copy = tmp_path / source.name
        copy.write_text(text.replace(first + "\n", first + "\n" + first + "\n", 1))
        with pytest.raises(SpecError, match="duplicate key %r" % first.split(":")[0].strip().lstrip("- ")):
            loader(copy) if loader is matrix.load else loader(copy, datasets.Catalogue)


def test_a_file_that_is_not_utf8_is_a_clear_error(tmp_path):
    path = tmp_path / "alexnet.yaml"
    path.write_bytes(ALEXNET.encode().replace(b"AlexNet", "AlexNet \u00e9".encode("latin-1"), 1))
    with pytest.raises(SpecError) as err:
        spec.load(str(path))
    assert len(err.value.problems) == 1 and err.value.problems[0].startswith("%s:" % path)
    assert (
        "not UTF-8 text (byte 0xe9 at offset" in err.value.problems[0]
        and "save the file as UTF-8" in err.value.problems[0]
    )


def test_an_empty_batch_size_list_is_an_error_naming_the_field(tmp_path):
    text = ALEXNET.replace("cpu: [16] ", "cpu: [] ", 1)
    path, problems = load_variant(tmp_path, text)
    line = [i for i, row in enumerate(text.splitlines(), 1) if "cpu: []" in row][0]
    assert problems == [
        "%s:%d: variants.alexnet-s.batch_sizes.cpu: List should have at least 1 item after "
        "validation, not 0" % (path, line)
    ]


def test_aliases_that_expand_to_millions_of_values_are_refused_at_once(tmp_path):
    import time

    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        "%s: &%s [%s]\n" % (chr(98 + i), chr(98 + i), ", ".join(["*%s" % chr(97 + i)] * 10)) for i in range(6)
    )
    start = time.perf_counter()
    path, problems = load_variant(tmp_path, bomb)
    assert time.perf_counter() - start < 5
    # a: 11 nodes, each next list 1 + 10 x the one before (b 111 ... g 11,111,111), plus the root and 7 keys
    assert problems == [
        "%s:1: aliases (*name) expand this file to 12,345,685 values, more than the 1,000,000 a "
        "file may hold: write the values out, or reuse fewer" % path
    ]
    # a duplicate key behind an alias is found once, on the node graph
    text = ALEXNET + "extra: &e {k: 1, k: 2}\nagain: *e\n"
    path, problems = load_variant(tmp_path, text)
    assert len(problems) == 1 and "duplicate key 'k'" in problems[0]


@pytest.mark.parametrize(
    "field, old, new, limit",
    [
        ("batch_sizes.cpu.0", "cpu: [16] ", "cpu: [2147483648] ", "65,536"),
        ("warmup", "warmup: 8", "warmup: 1000000000000", "100,000"),
    ],
)
def test_sizes_have_bounds_a_variant_can_raise(tmp_path, field, old, new, limit):
    variant = "variants.alexnet-s" if field.startswith("batch") else None
    text = ALEXNET.replace(old, new, 1)
    path, problems = load_variant(tmp_path, text)
    assert (
        len(problems) == 1 and ("above the limit of %s" % limit) in problems[0] and problems[0].startswith("%s:" % path)
    ), problems
    if variant:
        assert ": %s.%s: 2,147,483,648 is above the limit" % (variant, field) in problems[0]
        raised = text.replace("    warmup: 8\n", "    warmup: 8\n    limits: {batch_size: 4294967296}\n", 1)
        path.write_text(raised)
        assert spec.load(str(path)).variants["alexnet-s"].batch_sizes["cpu"] == [2147483648]


def test_a_look_alike_letter_in_a_framework_name_is_pointed_at(tmp_path):
    _, problems = load_variant(tmp_path, ALEXNET.replace("frameworks: [torch,", "frameworks: [t\u043erch,"))
    assert (
        len(problems) == 1
        and "no runner adapter for 't\u043erch' (character 2, '\u043e', is U+043E CYRILLIC SMALL LETTER O, not ASCII)"
        in problems[0]
    )
    _, problems = load_variant(tmp_path, ALEXNET.replace("frameworks: [torch,", "frameworks: [trch,"))
    assert "no runner adapter for 'trch' (did you mean torch?)" in problems[0]


def test_a_study_that_maps_a_tool_to_an_unknown_framework_is_refused(tmp_path):
    from dlrepro.inputs import studies

    text = (REPO_ROOT / "studies" / "dlbench.yaml").read_text()
    path = tmp_path / "dlbench.yaml"
    path.write_text(text.replace(": tensorflow", ": tensorflw", 1))
    with pytest.raises(SpecError) as err:
        studies.load(str(path))
    assert (
        len(err.value.problems) == 1
        and "tools.TensorFlow: unknown framework 'tensorflw' (did you mean tensorflow?)" in err.value.problems[0]
        and err.value.problems[0].startswith("%s:" % path)
    )


def test_a_20_mb_spec_is_refused_in_seconds_and_a_large_one_parsed_once(tmp_path):
    import time

    from dlrepro.inputs import yamlfile

    start = time.perf_counter()
    path, problems = load_variant(tmp_path, ALEXNET + "padding:\n" + "  - 1\n" * 3_500_000)
    assert time.perf_counter() - start < 5
    assert problems == [
        "%s: 20.0 MB, larger than the 4 MB a spec, study or catalogue file may be: is it the right file?" % path
    ]
    # under the bound: one parse by the C loader; the unknown field is named at the line its value starts
    assert yamlfile.LOADER is yamlfile.yaml.CSafeLoader
    path, problems = load_variant(tmp_path, ALEXNET + "padding:\n" + "  - 1\n" * 20_000)
    assert len(problems) == 1 and problems[0].startswith(
        "%s:%d: padding: unknown field 'padding'" % (path, ALEXNET.count("\n") + 2)
    )
