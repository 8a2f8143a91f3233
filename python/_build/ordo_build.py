"""python/_build/ordo_build.py - the PEP 517 build backend of the ordo
Python package, in the tree and needing nothing but the standard library,
so that `pip install ./python` works offline in a fresh venv (pip's build
isolation would otherwise download setuptools).

It builds a pure-Python wheel of the package `ordo` (python/ordo/*.py):
the metadata below, the version from ordo/__init__.py's __version__. The package loads libordo.so.0
at import (LIBORDO_PATH, the prefix it was installed with, or the dynamic
linker's path); the wheel does not carry the library.
"""
import base64
import hashlib
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


NAME = "ordo"
SUMMARY = ("ordo's client API for Python (ctypes over libordo.so.0), and "
           "ordo.torch for PyTorch training")


def _version():
    with open(os.path.join(HERE, "ordo", "__init__.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("ordo/__init__.py has no __version__")
    return m.group(1)


def _metadata(version):
    return "\n".join([
        "Metadata-Version: 2.1", "Name: " + NAME, "Version: " + version,
        "Summary: " + SUMMARY, "Requires-Python: >=3.8",
        "Provides-Extra: torch", 'Requires-Dist: torch; extra == "torch"']) + "\n"


def _files():
    pkg = os.path.join(HERE, "ordo")
    return sorted(("ordo/" + n, os.path.join(pkg, n)) for n in os.listdir(pkg)
                  if n.endswith(".py") and n != "_libpath.py")


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "%s,sha256=%s,%d" % (name, digest.decode(), len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    dist = "%s-%s" % (NAME, version)
    name = "%s-py3-none-any.whl" % dist
    info = dist + ".dist-info/"
    entries = [(arc, open(path, "rb").read()) for arc, path in _files()]
    entries.append((info + "METADATA", _metadata(version).encode()))
    entries.append((info + "WHEEL", b"Wheel-Version: 1.0\nGenerator: ordo_build\n"
                    b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(a, d) for a, d in entries] + [info + "RECORD,,"]
    entries.append((info + "RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for arc, data in entries:
            z.writestr(zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    dist = "%s-%s" % (NAME, version)
    name = dist + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "_build/ordo_build.py"] + [a for a, _ in _files()]:
            t.add(os.path.join(HERE, rel), arcname=dist + "/" + rel)
        pkg_info = os.path.join(sdist_directory, ".PKG-INFO")
        with open(pkg_info, "w") as f:
            f.write(_metadata(version))
        t.add(pkg_info, arcname=dist + "/PKG-INFO")
        os.unlink(pkg_info)
    return name
