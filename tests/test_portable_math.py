"""GOODOPT_MATH=portable: the processor-chosen arithmetic pinned, so that a run takes the same path anywhere."""

import os
import platform
import subprocess
import sys

import pytest

from goodopt.errors import ValidationError
from goodopt.portable_math import VARIABLE, is_pinned, mode, pinned_env

x86_linux = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux"),
                               reason="the portable arithmetic is defined for x86-64 Linux")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE",
                                                            "GLIBC_TUNABLES", VARIABLE)}
    return {**env, **extra}


def test_the_mode_is_native_unless_portable_is_asked_for_and_anything_else_is_refused():
    assert mode({}) == "native" and mode({VARIABLE: ""}) == "native"
    assert mode({VARIABLE: " Portable "}) == "portable"
    with pytest.raises(ValidationError) as err:
        mode({VARIABLE: "fast"})
    assert err.value.field == VARIABLE and "portable" in str(err.value)


@x86_linux
def test_the_pins_are_the_three_switches_the_libraries_read_as_they_load():
    pins = pinned_env()
    assert set(pins) == {"NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE", "GLIBC_TUNABLES"}
    assert is_pinned(pins) and not is_pinned({**pins, "OPENBLAS_CORETYPE": "Haswell"})


@x86_linux
def test_a_portable_program_restarts_itself_on_the_pinned_arithmetic_whatever_the_environment_chose():
    """The user's own choice of kernels (as another processor would make it) is replaced: the process that does
    the work runs numpy's baseline code and OpenBLAS's Nehalem kernels."""
    code = ("import sys; from goodopt.portable_math import restart_if_asked; restart_if_asked(); "
            "from goodopt.provenance import math_paths; print(math_paths()); print(sys.argv[1:])")
    native = subprocess.run([sys.executable, "-c", code, "x"], capture_output=True, text=True, check=True,
                            env=_env(OPENBLAS_CORETYPE="Sandybridge")).stdout
    portable = subprocess.run([sys.executable, "-c", code, "x"], capture_output=True, text=True, check=True,
                              env=_env(OPENBLAS_CORETYPE="Sandybridge", NPY_DISABLE_CPU_FEATURES="",
                                       **{VARIABLE: "portable"})).stdout
    assert "(Sandybridge)" in native
    assert "numpy exp/log/power: baseline" in portable and "(Nehalem)" in portable and "Sandybridge" not in portable
    assert portable.splitlines()[1] == "['x']"  # the same command line


@x86_linux
def test_the_goodopt_program_refuses_an_unknown_mode_naming_the_variable():
    p = subprocess.run([sys.executable, "-m", "goodopt.cli", "--version"], capture_output=True, text=True,
                       env=_env(**{VARIABLE: "fast"}), timeout=120)
    assert p.returncode == 2 and VARIABLE in p.stderr and "portable" in p.stderr
    ok = subprocess.run([sys.executable, "-m", "goodopt.cli", "--version"], capture_output=True, text=True,
                        env=_env(**{VARIABLE: "portable"}), timeout=120)
    assert ok.returncode == 0 and "goodopt" in ok.stdout


@x86_linux
def test_a_cached_result_is_not_reused_on_other_arithmetic():
    """The cache key holds the arithmetic: the same task keys alike in every process on the same code paths,
    and apart when the BLAS kernels differ (as on another processor), so results of the two are never mixed."""
    code = ("from goodopt.runs.cache import task_key; from goodopt.runs.tasks import sim_task; "
            "print(task_key(sim_task('generated:0.5:0:0.5', 'greedy', 'family:tiny:0')))")

    def key(**extra):
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env=_env(**extra), timeout=120).stdout.strip()

    import numpy  # noqa: F401
    from threadpoolctl import threadpool_info

    native = {i.get("architecture") for i in threadpool_info() if i.get("user_api") == "blas"}
    other = "Sandybridge" if "Nehalem" in native else "Nehalem"
    same = {key() for _ in range(4)}  # four processes: nothing in the key may vary from one to the next
    assert len(same) == 1 and key(OPENBLAS_CORETYPE=other) not in same
