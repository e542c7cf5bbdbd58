"""Run one tutorial script cell by cell and write what each cell printed and drew, for the documentation site.

    python docs/tutorials/run_tutorial.py TUTORIAL.py OUT_DIR

A tutorial is a Python script in cells separated by ``# %%`` lines; a cell
whose lines are all comments is prose (Markdown, the ``# `` removed). Cells run
in order in one namespace, in ``OUT_DIR`` (files a tutorial writes land there);
after each code cell every open matplotlib figure is saved as
``NAME-K.png`` and closed. ``OUT_DIR/NAME.json`` then lists the cells:
``text`` or ``code``, with ``stdout`` and ``images``. Any exception fails the
run (exit 1, the traceback on stderr): a tutorial that no longer runs breaks
the build and the slow test tier alike.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path


def cells(source: str) -> list[dict]:
    """The script's cells: ``{"text": markdown}`` or ``{"code": source}``, the module docstring left out."""
    out = []
    for chunk in source.split("\n# %%")[1:]:
        lines = chunk.split("\n")[1:]
        while lines and not lines[-1].strip():
            lines.pop()
        if not lines:
            continue
        if all(line.startswith("#") for line in lines):
            out.append({"text": "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in lines)})
        else:
            out.append({"code": "\n".join(lines)})
    return out


def run(script: Path, out_dir: Path) -> list[dict]:
    """Execute ``script``'s cells in ``out_dir``; each code cell gains ``stdout`` and ``images``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    os.chdir(out_dir)
    namespace: dict = {"__name__": "__main__"}
    done, n_images = [], 0
    for cell in cells(script.read_text()):
        if "code" in cell:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(cell["code"], str(script), "exec"), namespace)
            images = []
            for num in plt.get_fignums():
                n_images += 1
                name = f"{script.stem}-{n_images}.png"
                plt.figure(num).savefig(out_dir / name, dpi=110, bbox_inches="tight")
                images.append(name)
            plt.close("all")
            cell = {**cell, "stdout": buf.getvalue(), "images": images}
        done.append(cell)
    return done


def main(argv: list[str]) -> int:
    script, out_dir = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    result = run(script, out_dir)
    (out_dir / f"{script.stem}.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
