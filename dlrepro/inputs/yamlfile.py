"""Load a YAML file into a pydantic model, with errors that name file, line and field.

Used for specs, the image matrix and the dataset catalogue alike. A problem is
reported as ``specs/alexnet.yaml:14: variants.alexnet-s.batch_sizes.cpu.0: expected
an integer, got 'sixteen'`` (one line each), so the user can go straight to the fix.
"""

import functools
import types
import typing
from pathlib import Path

import pydantic
import yaml

from dlrepro.errors import SpecError


class Strict(pydantic.BaseModel):
    """Base of every file schema: unknown fields are errors, loaded values are immutable."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


def _locate(root, loc):
    """(1-based line, shown field path) of the YAML node at ``loc``, the deepest one that exists.

    Discriminated unions put the tag (a layer's ``type``) into pydantic's location;
    such parts have no node of their own and are left out of the shown path.
    """
    node, line, shown = root, root.start_mark.line + 1, []
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = [v for k, v in node.value if k.value == str(part)]
            if not match:
                if any(k.value == "type" and getattr(v, "value", None) == part for k, v in node.value):
                    continue
                shown.append(str(part))
                node = None
                continue
            node = match[0]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            shown.append(str(part))
            continue
        shown.append(str(part))
        line = node.start_mark.line + 1
    return line, ".".join(shown) or "(top level)"


def _strip(annotation):
    """Unwrap Optional/Annotated to the class that holds fields, list or dict item types."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _strip(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args
    return annotation


def _allowed_fields(model, loc):
    """Field names permitted at the mapping that holds ``loc[-1]``, or None if unknown."""
    candidates = [model]
    for part in loc[:-1]:
        nxt = []
        for cand in candidates:
            cand = _strip(cand)
            for c in cand if isinstance(cand, list) else [cand]:
                origin = typing.get_origin(c)
                if isinstance(c, type) and issubclass(c, pydantic.BaseModel):
                    tag = c.model_fields.get("type")
                    if part in c.model_fields:
                        nxt.append(c.model_fields[part].annotation)
                    elif tag is not None and part in typing.get_args(tag.annotation):
                        nxt.append(c)  # a tag inserted by a discriminated union
                elif origin in (list, tuple) and isinstance(part, int):
                    nxt.append(typing.get_args(c)[0])
                elif origin is dict:
                    nxt.append(typing.get_args(c)[1])
        candidates = nxt
    names = set()
    for cand in candidates:
        cand = _strip(cand)
        for c in cand if isinstance(cand, list) else [cand]:
            if isinstance(c, type) and issubclass(c, pydantic.BaseModel):
                names.update(c.model_fields)
    return sorted(names) or None


def _message(model, err):
    kind, loc = err["type"], err["loc"]
    if kind == "extra_forbidden":
        allowed = _allowed_fields(model, loc)
        return (
            "unknown field %r; expected one of: %s" % (loc[-1], ", ".join(allowed))
            if allowed
            else "unknown field %r" % (loc[-1],)
        )
    if kind == "missing":
        return "required field is missing"
    if kind == "value_error":  # our own validators' messages already say what was given
        return err["msg"].removeprefix("Value error, ")
    got = err.get("input")
    return err["msg"] if isinstance(got, (dict, list)) else "%s (got %r)" % (err["msg"], got)


def reference(key, what, optional=False):
    """A pydantic field validator: the value must name an entry of the file's top-level mapping ``key``.

    Use as ``_check = field_validator("model")(reference("models", "model"))``;
    ``load(..., names_of=("models",))`` supplies the names. With ``optional``, None passes.
    """

    def check(cls, value, info):
        names = (info.context or {}).get(key)
        if value is None and optional:
            return value
        if names is not None and value not in names:
            raise ValueError("unknown %s %r; the file defines: %s" % (what, value, ", ".join(sorted(names))))
        return value

    return check


def at(path, message):
    """A validator message about another field than the validated one: ``at("variants.x.data", "...")``.

    Validators that check several fields together (pydantic reports them at the model)
    join such messages with newlines; ``load`` reports each at ``path``'s own line.
    """
    return "@%s: %s" % (path, message)


def _pointed(err):
    """[(location, message)]: the error's own, or those that ``at`` messages point to."""
    text = err["msg"].removeprefix("Value error, ")
    if err["type"] != "value_error" or not text.startswith("@"):
        return [(err["loc"], None)]
    pointed = []
    for line in text.splitlines():
        where, _, message = line[1:].partition(": ")
        pointed.append((tuple(int(p) if p.isdigit() else p for p in where.split(".")), message))
    return pointed


# the C parser when PyYAML was built with libyaml (tens of times faster on a large file), else the Python one
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_NODES = 1_000_000  # a spec holds thousands; aliases that expand past this are refused, not expanded
MAX_BYTES = 4 * 2**20  # the suite's largest file is under 100 KB; PyYAML builds objects in Python, ~30 s per 10 MB


def _walk(root):
    """Each distinct node of the graph under ``root`` once (an alias is one node however often it is used), and
    the number of nodes the graph expands to (every alias counted as its whole subtree)."""
    sizes, seen, order, stack = {}, set(), [], [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            children = (
                node.value
                if isinstance(node, yaml.SequenceNode)
                else [n for pair in node.value for n in pair]
                if isinstance(node, yaml.MappingNode)
                else []
            )
            sizes[id(node)] = 1 + sum(sizes.get(id(c), 0) for c in children)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.append((node, True))
        if isinstance(node, yaml.SequenceNode):
            stack += [(c, False) for c in node.value]
        elif isinstance(node, yaml.MappingNode):
            stack += [(c, False) for pair in node.value for c in pair]
    return order, sizes.get(id(root), 1)


def _duplicates(nodes, path):
    """``FILE:LINE: duplicate key 'K'`` for every key that a mapping among ``nodes`` repeats (YAML forbids it;
    PyYAML would silently keep the last value)."""
    problems = []
    for node in nodes:
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        problems.append(
                            "%s:%d: duplicate key %r: a mapping may name each key once (the first is "
                            "at an earlier line); remove one" % (path, key.start_mark.line + 1, key.value)
                        )
                    seen.add(key.value)
    return problems


@functools.lru_cache(maxsize=256)
def _parse(path, text):
    """(root node, data) of YAML ``text``, parsed once per text (a study's answer loads its specs hundreds of times:
    230 loads made 6 of the 9 s of gather.study); neither is changed by its users. Raises SpecError for YAML that does
    not parse, a duplicate key, or aliases that expand to more than MAX_NODES nodes."""
    loader = LOADER(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        nodes, expanded = _walk(root)
        if expanded > MAX_NODES:
            raise SpecError(
                path,
                [
                    "%s:%d: aliases (*name) expand this file to %s values, more than the %s a file "
                    "may hold: write the values out, or reuse fewer"
                    % (path, root.start_mark.line + 1, format(expanded, ","), format(MAX_NODES, ","))
                ],
            )
        duplicates = _duplicates(nodes, path)
        if duplicates:
            raise SpecError(path, duplicates)
        return root, loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = "%s:%d" % (path, mark.line + 1) if mark else str(path)
        raise SpecError(path, ["%s: not valid YAML: %s" % (where, getattr(exc, "problem", exc))]) from None
    finally:
        loader.dispose()


def _text(path):
    """The file's text; raises SpecError when it cannot be read, is larger than MAX_BYTES or is not UTF-8."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise SpecError(
                path,
                [
                    "%s: %.1f MB, larger than the %d MB a spec, study or catalogue file may be: is it "
                    "the right file?" % (path, size / 2**20, MAX_BYTES // 2**20)
                ],
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError(path, ["%s: cannot read: %s" % (path, exc.strerror)]) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(
            path,
            [
                "%s:%d: not UTF-8 text (byte 0x%02x at offset %d): save the file as UTF-8"
                % (path, line, raw[exc.start], exc.start)
            ],
        ) from None


def load(path, model, names_of=(), context=None):
    """Parse YAML file ``path`` and validate it as pydantic ``model``.

    ``context`` is passed to pydantic validators, with the names of the top-level
    mappings listed in ``names_of`` added (for ``reference`` validators).
    Raises SpecError listing every problem as ``FILE:LINE: FIELD: message``: a file that cannot
    be read or is not UTF-8, YAML that does not parse, a duplicate key, aliases that expand past MAX_NODES,
    a value the schema refuses.
    """
    path = Path(path)
    root, data = _parse(path, _text(path))
    if not isinstance(data, dict):
        raise SpecError(path, ["%s:1: the file must hold a mapping (key: value) at top level" % path])
    try:
        names = {key: set(data[key]) if isinstance(data.get(key), dict) else None for key in names_of}
        return model.model_validate(data, context=dict(context or {}, **names))
    except pydantic.ValidationError as exc:
        problems = []
        for err in exc.errors():
            for loc, message in _pointed(err):
                line, field = _locate(root, loc)
                problems.append("%s:%s: %s: %s" % (path, line, field, message or _message(model, err)))
        raise SpecError(path, problems) from None
