"""What a build says as it goes, from Docker's BuildKit or from the classic stream (Podman), as events.

Docker builds with BuildKit (the ``/build`` API with ``version=2``): its progress comes as ``moby.buildkit.trace``
messages, each a base64 protobuf ``StatusResponse`` of moby/buildkit's api/services/control/control.proto
(vertexes = 1, logs = 3; Vertex: digest = 1, name = 3, cached = 4, started = 5, completed = 6, error = 7;
VertexLog: vertex = 1, msg = 4). Podman's Docker-compatible API answers as the classic builder did ("STEP 1/9: ..."
lines, "--> <id>" after each step). ``Events`` turns either into ("step", header), ("line", text) and
("error", message) events.
"""

import base64

TRACE = "moby.buildkit.trace"


def _varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7


def fields(data):
    """{field number: [values]} of one protobuf message (bytes for length-delimited fields, int for varints); raises
    ValueError on a wire type protobuf does not have."""
    out, at = {}, 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, at = data[at : at + size], at + size
        else:
            raise ValueError("protobuf wire type %d" % wire)
        out.setdefault(number, []).append(value)
    return out


class Events:
    """Feed each chunk of the ``/build`` answer to ``events(chunk)``; each BuildKit step is announced once, when it
    starts ("CACHED ..." when the cache had it)."""

    def __init__(self):
        self.announced = set()

    def events(self, chunk):
        if chunk.get("id") == TRACE:
            return self._trace(fields(base64.b64decode(chunk["aux"])))
        if "error" in chunk:
            return [("error", chunk["error"])]
        text = chunk.get("stream") or chunk.get("status") or ""
        if not text:
            return []
        return [
            ("step" if text.upper().startswith("STEP ") else "line", text)
        ]  # Docker: "Step 1/9 :", Podman: "STEP 1/9:"

    def _trace(self, status):
        found = []
        for raw in status.get(1, []):
            vertex = fields(raw)
            digest, name = vertex.get(1, [b""])[0], vertex.get(3, [b""])[0].decode("utf-8", "replace")
            if digest not in self.announced and (5 in vertex or vertex.get(4, [0])[0]):
                self.announced.add(digest)
                found.append(("step", ("CACHED " if vertex.get(4, [0])[0] else "") + name))
            if 7 in vertex:
                found.append(("line", "%s: %s\n" % (name, vertex[7][0].decode("utf-8", "replace"))))
        for raw in status.get(3, []):
            found.append(("line", fields(raw).get(4, [b""])[0].decode("utf-8", "replace")))
        return found
