"""Build hooks of the documentation site (mkdocs.yml ``hooks``).

* The home page is the README, its links into ``docs/`` made the site's.
* Every ``docs/tutorials/*.py`` is run by goodopt's own Python
  (``GOODOPT_PYTHON``, default ``.venv/bin/python``) through
  ``run_tutorial.py``, and becomes the page ``tutorials/NAME.md``: its
  docstring, then each cell with what it printed and drew. A tutorial that
  fails fails the build.
* ``<!-- options: SECTION -->`` becomes that section of
  ``goodopt/option_meanings.yaml``, the declaration ``goodopt options`` reads.
* ``<!-- table: data/NAME.csv -->`` in a page becomes that CSV as a table,
  with the machine, date and commit of its ``NAME.meta.json`` under it: the
  numbers the docs quote come from these files, which ``make bench`` and
  ``goodopt reproduce`` write, and not from typed prose.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
TABLE = re.compile(r"<!-- table: (\S+?\.csv) -->")
OPTIONS = re.compile(r"<!-- options: (\S+?) -->")


def _python() -> str:
    return os.environ.get("GOODOPT_PYTHON") or str(ROOT / ".venv" / "bin" / "python")


def on_files(files, config):
    files.append(File.generated(config, "index.md", content=_home()))
    for script in sorted((DOCS / "tutorials").glob("*.py")):
        if script.name == "run_tutorial.py":
            continue
        for uri, content in _tutorial_page(script).items():
            files.append(File.generated(config, uri, content=content))
    return files


def _home() -> str:
    """The README as the site's home page: its links into docs/ made relative to the site."""
    text = (ROOT / "README.md").read_text()
    text = text.replace("sources in [`docs/`](docs/)", "sources in `docs/`")
    return re.sub(r"\]\(docs/", "](", text)


def _tutorial_page(script: Path) -> dict[str, str | bytes]:
    """The page ``tutorials/NAME.md`` and its images, from running ``script``."""
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([_python(), str(DOCS / "tutorials" / "run_tutorial.py"), str(script), tmp],
                           capture_output=True, text=True, timeout=1800)
        if p.returncode != 0:
            raise PluginError(f"tutorial {script.name} failed:\n{p.stderr[-3000:]}")
        cells = json.loads((Path(tmp) / f"{script.stem}.json").read_text())
        pages: dict[str, str | bytes] = {}
        doc = ast.get_docstring(ast.parse(script.read_text())) or script.stem
        parts = [f"# {doc.strip()}", "", f"*This page is `docs/tutorials/{script.name}`, run as the site was built.*"]
        for cell in cells:
            if "text" in cell:
                parts += ["", cell["text"]]
                continue
            parts += ["", "```python", cell["code"], "```"]
            if cell["stdout"].strip():
                parts += ["", "```text", cell["stdout"].rstrip(), "```"]
            for name in cell["images"]:
                pages[f"tutorials/{name}"] = (Path(tmp) / name).read_bytes()
                parts += ["", f"![]({name})"]
        pages[f"tutorials/{script.stem}.md"] = "\n".join(parts) + "\n"
        return pages


def on_page_markdown(markdown, page, config, files):
    markdown = OPTIONS.sub(lambda m: _options(m.group(1)), markdown)
    return TABLE.sub(lambda m: _table(m.group(1)), markdown)


def _options(section: str) -> str:
    """A section of ``goodopt/option_meanings.yaml`` (what ``goodopt options NAME`` prints) as a table."""
    import yaml

    sections = yaml.safe_load((ROOT / "goodopt" / "option_meanings.yaml").read_text())
    if section not in sections:
        raise PluginError(f"options: no section {section!r} in goodopt/option_meanings.yaml")
    lines = ["| option | default | meaning |", "|---|---|---|"]
    lines += [f"| {r['option']} | {r['default']} | {r['meaning']} |" for r in sections[section]["rows"]]
    return "\n".join(lines)


def _table(rel: str) -> str:
    path = DOCS / rel
    if not path.is_file():
        raise PluginError(f"{rel}: no such data file (make bench / goodopt reproduce write it)")
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    meta_file = path.with_suffix(".meta.json")
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    missing = [k for k in ("machine", "date", "commit") if k not in meta]
    if missing:
        raise PluginError(f"{meta_file.name}: the stamp lacks {', '.join(missing)}")
    head, body = rows[0], rows[1:]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in body]
    lines += ["", f"*`{rel}`: {meta['machine']}, {meta['date']}, commit `{meta['commit'][:12]}`.*"]
    return "\n".join(lines)


def _cell(value: str) -> str:
    try:
        x = float(value)
    except ValueError:
        return value.replace("|", "\\|")
    return value if x.is_integer() and "." not in value else f"{x:.3g}"
