"""The archive's RO-Crate metadata (rocrate library): every file with its sha256, size and format, the run as a
CreateAction whose instruments are the images and the suite."""

import json
import mimetypes
from pathlib import Path

from dlrepro import __version__
from dlrepro.store.archive.members import MANIFEST, SUMS

FORMATS = {
    ".json": "application/json",
    ".csv": "text/csv",
    ".parquet": "application/vnd.apache.parquet",
    ".yaml": "application/yaml",
    ".txt": "text/plain",
    ".lock": "text/plain",
    ".in": "text/plain",
    ".tar": "application/x-tar",
    ".md": "text/markdown",
    ".html": "text/html",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".log": "text/plain",
}


PLAIN_NAMES = {"Dockerfile": "text/plain", SUMS: "text/plain", MANIFEST: "text/plain"}


def encoding_format(name):
    base = name.rsplit("/", 1)[-1]
    return (
        PLAIN_NAMES.get(base)
        or FORMATS.get(Path(base).suffix)
        or mimetypes.guess_type(base)[0]
        or "application/octet-stream"
    )


def schema_versions(bundle_dir):
    """{file below bundle/: schema version} of every JSON file with a top-level 'schema' and of the tables."""
    found = {}
    for path in sorted(bundle_dir.rglob("*.json")):
        try:
            schema = json.loads(path.read_text()).get("schema")
        except (ValueError, AttributeError):
            continue
        if isinstance(schema, str):
            found[path.relative_to(bundle_dir).as_posix()] = schema
    for path in sorted(bundle_dir.glob("*.parquet")):
        try:
            import pyarrow.parquet as pq

            value = (pq.read_schema(path).metadata or {}).get(b"dlrepro.tables")
        except Exception:  # an unreadable table is validate's concern, not the archive's
            continue
        if value:
            found[path.name] = value.decode()
    return found


def crate_json(body, members, schemas, license_id, author):
    """ro-crate-metadata.json's bytes for the members (none of which is the crate or the manifest)."""
    from rocrate.model.contextentity import ContextEntity
    from rocrate.model.person import Person
    from rocrate.rocrate import ROCrate

    crate = ROCrate()
    crate.root_dataset["datePublished"] = body.get("finished") or body.get("created")
    crate.name = "dlrepro result bundle %s" % body["id"]
    crate.description = (
        "Benchmark results of spec %s (%s executor, %s) with the exact specs, image locks, "
        "rendered Dockerfiles%s"
        % (
            body["spec"]["name"],
            (body.get("executor") or {}).get("executor"),
            (body.get("executor") or {}).get("device"),
            " and image archives" if any(m.name.startswith("docker/") for m in members) else "",
        )
    )
    lic = crate.add(
        ContextEntity(
            crate,
            "https://spdx.org/licenses/%s" % license_id,
            properties={"@type": "CreativeWork", "name": license_id, "identifier": license_id},
        )
    )
    crate.license = lic
    crate.root_dataset["identifier"] = body["id"]
    crate.root_dataset["schemaVersion"] = sorted(set(schemas.values()))
    files = {}
    for m in members:
        props = {
            "name": m.name.rsplit("/", 1)[-1],
            "sha256": m.sha256,
            "contentSize": str(m.size),
            "encodingFormat": encoding_format(m.name),
        }
        schema = schemas.get(m.name[len("bundle/") :]) if m.name.startswith("bundle/") else None
        if schema:
            props["schemaVersion"] = schema
        files[m.name] = crate.add_file(dest_path=m.name, properties=props)
    suite = body.get("suite") or {}
    git = suite.get("git") or {}
    tools = [
        crate.add(
            ContextEntity(
                crate,
                "#dlrepro",
                properties={
                    "@type": "SoftwareApplication",
                    "name": "dlrepro",
                    "version": suite.get("version") or __version__,
                    **(
                        {"identifier": "git:%s%s" % (git["commit"], "-dirty" if git.get("dirty") else "")}
                        if git
                        else {}
                    ),
                },
            )
        )
    ]
    for image in body.get("images") or []:
        saved = files.get("docker/%s.tar" % image["name"])
        props = {
            "@type": "SoftwareApplication",
            "name": image["name"],
            "identifier": image["image_id"],
            "alternateName": image.get("tag"),
            "softwareVersion": image.get("framework_version"),
            "applicationCategory": "container image",
        }
        parts = [
            files[n]
            for n in (
                "bundle/images/%s/Dockerfile" % image["name"],
                "bundle/images/%s/requirements.lock" % image["name"],
            )
            if n in files
        ]
        if parts:
            props["softwareRequirements"] = parts
        if saved:
            props["distribution"] = saved
        tools.append(
            crate.add(
                ContextEntity(
                    crate, "#image-%s" % image["name"], properties={k: v for k, v in props.items() if v is not None}
                )
            )
        )
    action = {
        "@type": "CreateAction",
        "name": "dlrepro run %s" % body["id"],
        "description": body.get("command"),
        "startTime": body.get("created"),
        "endTime": body.get("finished"),
        "actionStatus": "http://schema.org/CompletedActionStatus",
    }
    if author:
        person = crate.add(Person(crate, "#author", properties={"name": author}))
        crate.creator = person
        action["agent"] = person
    inputs = [files[n] for n in sorted(files) if n.startswith("specs/")]
    outputs = [files[n] for n in sorted(files) if n.startswith("bundle/")]
    crate.add_action(
        tools,
        identifier="#run-%s" % body["id"],
        object=inputs,
        result=outputs,
        properties={k: v for k, v in action.items() if v is not None},
    )
    return json.dumps(crate.metadata.generate(), indent=1, sort_keys=True, ensure_ascii=False).encode() + b"\n"
