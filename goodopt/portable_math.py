"""The same arithmetic on every x86-64 processor: ``GOODOPT_MATH=portable``.

numpy's ``exp``, ``log`` and ``power``, the C library's, and OpenBLAS (numpy's and scipy's, under L-BFGS-B's
linear algebra) each pick their code by processor when they load, and each rounds the last bit its own way
(:mod:`goodopt.provenance`, :func:`~goodopt.provenance.math_paths`). Each also has a switch that pins one
variant, read once as the process starts:

* ``NPY_DISABLE_CPU_FEATURES``: numpy's dispatch targets above its baseline (x86-64-v2) switched off;
* ``OPENBLAS_CORETYPE=Nehalem``: OpenBLAS's SSE kernels, which every x86-64 processor numpy runs on has;
* ``GLIBC_TUNABLES=glibc.cpu.hwcaps=...``: the C library's generic ``exp``/``log``/``pow``, not its FMA and
  AVX2 variants.

With ``GOODOPT_MATH=portable`` in the environment, the ``goodopt`` program and ``python -m paper_figures``
start themselves again with these set (:func:`restart_if_asked`), and every local process they start (sweep
workers) inherits them; a Dask cluster's workers need them in their own environment. The arithmetic then no
longer follows which of these variants the processor would pick (the compiled GA kernels target the processor
too, but do integer and element-wise work only, which rounds alike everywhere).
It costs little: these are the small arrays of many short calls, where the wide code paths gain little. Python
code that imports goodopt cannot change its own process's arithmetic: start Python with :func:`pinned_env`'s
variables set instead. ``GLIBC_TUNABLES`` is replaced, not merged, while the pins hold.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping

from .errors import ValidationError

#: The environment variable that asks for the portable arithmetic, and its values.
VARIABLE = "GOODOPT_MATH"
MODES = ("native", "portable")
#: numpy's x86-64 dispatch targets above its baseline (numpy 2.x); names a build or processor lacks are ignored.
NUMPY_TARGETS = "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"
#: The C library's processor features whose ``exp``/``log``/``pow`` variants are switched off.
GLIBC_HWCAPS = "glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4,-AVX512F"
_RESTARTED = "GOODOPT_MATH_RESTARTED"


def mode(env: Mapping[str, str] | None = None) -> str:
    """``native`` (the default) or ``portable``, from ``GOODOPT_MATH``; any other value is refused."""
    value = (os.environ if env is None else env).get(VARIABLE, "native").strip().lower() or "native"
    if value not in MODES:
        raise ValidationError(VARIABLE, f"must be one of {', '.join(MODES)}, got {value!r}",
                              f"set {VARIABLE}=portable for the same arithmetic on every x86-64 processor, "
                              "or unset it")
    return value


def pinned_env() -> dict[str, str]:
    """The variables that pin the arithmetic (module docstring); refused off x86-64 Linux, where these
    switches are not the ones that choose the code."""
    if platform.machine() not in ("x86_64", "AMD64") or not sys.platform.startswith("linux"):
        raise ValidationError(VARIABLE, f"portable arithmetic is defined for x86-64 Linux, not {sys.platform} "
                                        f"on {platform.machine()}", f"unset {VARIABLE} on this machine")
    return {"NPY_DISABLE_CPU_FEATURES": NUMPY_TARGETS, "OPENBLAS_CORETYPE": "Nehalem",
            "GLIBC_TUNABLES": GLIBC_HWCAPS}


def is_pinned(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``env`` (default: this process's) holds every variable of :func:`pinned_env` at its value."""
    env = os.environ if env is None else env
    return all(env.get(k) == v for k, v in pinned_env().items())


def restart_if_asked() -> None:
    """Under ``GOODOPT_MATH=portable``, start this program again (the same command line, ``sys.orig_argv``) with
    :func:`pinned_env` set, unless it already is; otherwise return. Call it first thing in a program's entry
    point: the switches are read as the libraries load, so only a new process takes them."""
    if mode() != "portable" or is_pinned():
        return
    if os.environ.get(_RESTARTED):  # the new process did not get the variables: say so instead of looping
        raise ValidationError(VARIABLE, "the restarted program does not see the pinned variables",
                              f"set {', '.join(f'{k}={v!r}' for k, v in pinned_env().items())} yourself")
    env = {**os.environ, **pinned_env(), _RESTARTED: "1"}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, list(sys.orig_argv), env)
