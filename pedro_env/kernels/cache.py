"""Where numba keeps the compiled kernels, and why a cached kernel is never stale.

numba caches a compiled function beside its source (``__pycache__``, else the user's cache folder,
else ``NUMBA_CACHE_DIR``) and stamps the cache with a digest of the defining file alone. A kernel
compiled with a callee from another file (inlined or linked) would then keep a stale copy of that
callee after the callee's file changed. :class:`KernelSourcesLocator` stamps every kernel of a
registered file with a digest of that file and of every engine source the kernels read (the kernel
modules and the layouts they import: cards, actions, state, the observation layout), so any change
to any of them recompiles every kernel. A package that compiles over the engine (the search
agents' solver) registers its own files with :func:`register_kernel_sources`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from numba import config
from numba.core import caching

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # pedro_env/
ENGINE_SOURCES = (
    *sorted((PACKAGE_DIR / "kernels").glob("*.py")),
    PACKAGE_DIR / "cards.py",
    PACKAGE_DIR / "actions.py",
    PACKAGE_DIR / "state.py",
    PACKAGE_DIR / "observation_layout.py",
)
"""The files whose text the engine's compiled kernels depend on."""

_STAMPS: dict[str, bytes] = {}  # absolute source path -> the stamp of its kernels


def sources_digest(paths: tuple[Path, ...] | list[Path]) -> bytes:
    """SHA-256 over the names and bytes of ``paths``, in order."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).name.encode())
        digest.update(Path(path).read_bytes())
    return digest.digest()


def register_kernel_sources(*files: str | Path, depends_on: tuple[Path, ...] = ()) -> None:
    """Stamp the kernels defined in ``files`` with a digest of ``files``, ``depends_on`` and the engine's sources
    (call before the first ``@njit(cache=True)`` of those files runs)."""
    own = tuple(Path(file).resolve() for file in files)
    stamp = sources_digest([*ENGINE_SOURCES, *depends_on, *own])
    for path in own:
        _STAMPS[str(path)] = stamp


class KernelSourcesLocator(caching._CacheLocator):
    """numba's own choice of cache folder for a registered file, with the stamp of :func:`register_kernel_sources`
    in place of the file's own digest."""

    def __init__(self, inner: caching._CacheLocator, stamp: bytes) -> None:
        self._inner, self._stamp = inner, stamp

    def get_cache_path(self) -> str:
        return self._inner.get_cache_path()

    def get_source_stamp(self) -> bytes:
        return self._stamp

    def get_disambiguator(self) -> str:
        return self._inner.get_disambiguator()

    @classmethod
    def from_function(cls, py_func, py_file):  # noqa: ANN001, ANN206 - numba's signature
        stamp = _STAMPS.get(str(Path(py_file).resolve()))
        if stamp is None:
            return None
        for locator_class in (
            caching.UserProvidedCacheLocator,
            caching.InTreeCacheLocator,
            caching.UserWideCacheLocator,
        ):
            inner = locator_class.from_function(py_func, py_file)
            if inner is not None:
                return cls(inner, stamp)
        return None


def _install() -> None:
    """Put :class:`KernelSourcesLocator` first in numba's list; with a read-only install and home, cache in the
    temporary folder."""
    if KernelSourcesLocator not in caching.CacheImpl._locator_classes:
        caching.CacheImpl._locator_classes.insert(0, KernelSourcesLocator)
    writable = any(
        locator.from_function(_install, __file__) is not None
        for locator in (caching.InTreeCacheLocator, caching.UserWideCacheLocator)
    )
    if not config.CACHE_DIR and not writable:
        config.CACHE_DIR = os.path.join(
            tempfile.gettempdir(), f"pedro_env-numba-{os.getuid() if hasattr(os, 'getuid') else 0}"
        )


_install()
register_kernel_sources(*(PACKAGE_DIR / "kernels").glob("*.py"))

# ---------------------------------------------------------------- the first compile

_ANNOUNCED = False
_PROBE: list[Any] = []  # a kernel whose cache file tells whether this machine compiled the kernels before


def announce_probe(kernel: Any) -> None:
    """Make ``kernel`` (compiled with every other, :func:`pedro_env.kernels.steps.vector_step`) the one whose cache
    :func:`announce_compiling` looks for."""
    _PROBE[:] = [kernel]


def announce_compiling() -> None:
    """Say once per process, on stderr, when the kernels are about to be compiled (no cache for this machine yet)."""
    global _ANNOUNCED
    if _ANNOUNCED or config.DISABLE_JIT or not _PROBE:
        return
    _ANNOUNCED = True
    try:
        cached = os.path.exists(_PROBE[0]._cache._cache_file._index_path)
    except AttributeError:  # another numba's internals: say nothing
        return
    if not cached:
        print(
            "pedro_env: compiling the rules kernels for this machine (once: about 20 s, then cached)",
            file=sys.stderr,
            flush=True,
        )
