"""The compiled kernels' on-disk cache goes stale with every file a kernel compiles in (goodopt.kernel_cache)."""

from __future__ import annotations

from goodopt.solvers import ga_breeding, ga_kernels

from goodopt import kernel_cache
from goodopt.outputs import sha256_file


def test_the_breeding_kernels_cache_is_stamped_with_the_repair_it_compiles_in():
    # children_rows holds ga_kernels' repair; with numba's own locator an edit of ga_kernels.py alone would
    # leave its cache entry valid (the old repair, run silently). The locked numba must take goodopt's locator.
    locator = ga_breeding.children_rows._cache._impl.locator
    assert type(locator).__name__.startswith("Dependent")
    stamp = locator.get_source_stamp()
    assert isinstance(stamp, tuple) and len(stamp) == 2
    assert stamp[1] == sha256_file(ga_kernels.__file__)


def test_a_stamp_changes_with_the_content_of_a_dependency_and_only_then(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_cache, "_DEPENDS", dict(kernel_cache._DEPENDS))  # the temporary files leave no trace
    caller, callee, alone = tmp_path / "caller.py", tmp_path / "callee.py", tmp_path / "alone.py"
    for f in (caller, callee, alone):
        f.write_text("x = 1\n")
    kernel_cache.depends_on(str(caller), str(callee))
    before = kernel_cache.source_stamp("own", str(caller))
    assert kernel_cache.source_stamp("own", str(caller)) == before  # the same files, the same stamp
    callee.write_text("x = 2\n")
    after = kernel_cache.source_stamp("own", str(caller))
    assert after != before and after[0] == "own"
    assert kernel_cache.source_stamp("own", str(alone)) == "own"  # a file without dependencies: numba's stamp
