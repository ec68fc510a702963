"""How the bytes of a build travel: CA bundle, package indexes and local wheel files.

Locked-down networks intercept TLS and mirror package indexes. The build gets:
- an extra CA bundle (the host pip's ``cert``, else SSL_CERT_FILE), used by pip inside;
- the host's http(s) index settings (``index-url``, ``extra-index-url``);
- every locked file that the host already holds in a find-links directory or a
  file:// index, copied into the context, so pip inside installs it offline.

None of this changes what is installed (the lock pins every file by SHA-256), so it
sits in the context's ``transport/`` folder, which the image tag's hash leaves out.
"""

import configparser
import html.parser
import os
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

from dlrepro.files import sha256_file

CONTAINER_DIR = "/tmp/transport"


class PipSettings:
    """The subset of pip's configuration that decides where packages come from."""

    def __init__(self, index_url=None, extra_index_urls=(), find_links=(), cert=None):
        self.index_url = index_url
        self.extra_index_urls = list(extra_index_urls)
        self.find_links = list(find_links)
        self.cert = cert


def host_settings():
    """The host pip's settings, as ``pip config list`` resolves them (files, then PIP_* variables)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True)
    values = {}
    for line in proc.stdout.splitlines():
        key, _, raw = line.partition("=")
        section, _, option = key.partition(".")
        value = raw.strip().strip("'\"")
        rank = {":env:": 3, "install": 2, "global": 1}.get(section, 0)
        if rank and rank >= values.get(option, (0, None))[0]:
            values[option] = (rank, value)

    def get(option):
        return values.get(option, (0, None))[1]

    cert = get("cert") or os.environ.get("SSL_CERT_FILE") or os.environ.get("REQUESTS_CA_BUNDLE")
    return PipSettings(
        index_url=get("index-url"),
        extra_index_urls=(get("extra-index-url") or "").split(),
        find_links=(get("find-links") or "").split(),
        cert=cert,
    )


def _local_path(location):
    """Filesystem path of a local directory or file:// URL, else None."""
    if location.startswith("file://"):
        return Path(urllib.request.url2pathname(urllib.parse.urlparse(location).path))
    if "://" not in location:
        return Path(location)
    return None


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.extend(v for k, v in attrs if k == "href" and v)


def _index_candidates(root, pin):
    """(sha256, path) of the files a file:// simple index lists for ``pin``'s project."""
    page = root / pin.name / "index.html"
    if not page.is_file():
        return []
    parser = _Links()
    parser.feed(page.read_text(errors="replace"))
    found = []
    for href in parser.hrefs:
        url, _, fragment = href.partition("#")
        if fragment.startswith("sha256="):
            found.append((fragment[len("sha256=") :], (page.parent / urllib.parse.unquote(url)).resolve()))
    return found


def _dir_candidates(directory, pin):
    """(sha256, path) of the wheels of ``pin``'s project and version in a find-links directory."""
    found = []
    for path in directory.glob("*.whl"):
        try:
            name, version, _, _ = parse_wheel_filename(path.name)
        except ValueError:
            continue
        if name == canonicalize_name(pin.name) and str(version) == pin.version:
            found.append((sha256_file(path), path))
    return found


def collect_local_files(pins, settings, dest):
    """Copy into ``dest`` each locked file the host holds locally; returns {project: file name}."""
    sources = []
    for location in settings.find_links:
        path = _local_path(location)
        if path is not None and path.is_dir():
            sources.append((_dir_candidates, path))
    for location in [settings.index_url] + settings.extra_index_urls:
        path = _local_path(location) if location else None
        if path is not None and path.is_dir():
            sources.append((_index_candidates, path))
    dest.mkdir(parents=True, exist_ok=True)
    copied = {}
    for pin in pins:
        for candidates, root in sources:
            match = [p for digest, p in candidates(root, pin) if digest in pin.hashes and p.is_file()]
            if match:
                target = dest / match[0].name
                try:
                    os.link(match[0], target)
                except OSError:
                    shutil.copy2(match[0], target)
                copied[pin.name] = match[0].name
                break
    return copied


def write(dest, pins, settings, ca_bundle=None):
    """Fill the context's transport/ folder; returns a record of what travels (for the build record)."""
    dest.mkdir(parents=True, exist_ok=True)
    conf = configparser.ConfigParser()
    conf["global"] = {
        "disable-pip-version-check": "true",
        "no-input": "true",
        "timeout": "120",
        "find-links": CONTAINER_DIR + "/wheels",
    }
    remote = [u for u in [settings.index_url] + settings.extra_index_urls if u and _local_path(u) is None]
    if settings.index_url and _local_path(settings.index_url) is None:
        conf["global"]["index-url"] = settings.index_url
    extra = [u for u in settings.extra_index_urls if _local_path(u) is None]
    if extra:
        conf["global"]["extra-index-url"] = " ".join(extra)
    ca = ca_bundle or settings.cert
    if ca:
        shutil.copyfile(ca, dest / "ca.pem")
        conf["global"]["cert"] = CONTAINER_DIR + "/ca.pem"
    with open(dest / "pip.conf", "w") as f:
        conf.write(f)
    local = collect_local_files(pins, settings, dest / "wheels")
    return {"remote_indexes": [_redact(u) for u in remote], "ca_bundle": str(ca) if ca else None, "local_files": local}


def _redact(url):
    """``url`` without user:password, for records that others will read."""
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        parts = parts._replace(netloc=parts.hostname + (":%d" % parts.port if parts.port else ""))
    return urllib.parse.urlunsplit(parts)
