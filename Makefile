# goodopt: every target creates or refreshes the local virtual environment first.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# a relative GOODOPT_TRACES is taken from the folder make runs in, once, so that every command and test
# (whatever folder it runs in) reads the same traces
GOODOPT_TRACES ?= ../shared/traces
override GOODOPT_TRACES := $(abspath $(GOODOPT_TRACES))
export GOODOPT_TRACES

# make figures FULL=1: paper scale on the published traces (hours, not minutes).
FIGURE_ARGS := $(if $(FULL),--scale full,)
FIGS := fig1 fig2 fig3 fig4 fig5 fig6 fig7 fig8 fig9 fig10 fig11 fig12
# The figures on pinned arithmetic where it is defined (x86-64 Linux; goodopt.portable_math), so that their tables
# are the same on every such machine; FIGURES_MATH=native for the processor's own code paths.
FIGURES_MATH ?= $(if $(filter Linux-x86_64,$(shell uname -s)-$(shell uname -m)),portable,native)

.PHONY: venv test test-slow test-all test-latest lock lint figures $(FIGS) docs-figure docs docs-lock bench fit reproduce library clean

venv: $(STAMP)

# the exact versions the suite passed with (requirements.txt, the lock: every file checked against its sha256, the build
# tools setuptools and wheel included), then goodopt itself without resolving again and built with those locked
# tools (no build isolation, which would fetch the newest); pip stays the one the venv came with
LOCK   := requirements.txt

$(STAMP): pyproject.toml $(LOCK)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r $(LOCK)
	@# the filter hides setuptools' notice that an editable install maps goodopt.solvers etc. through an
	@# import finder (the top-level folders are not named like their packages); nothing else is hidden
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $(STAMP)

# The suite on the newest versions of everything (a separate venv): goodopt's direct dependencies and test tools
# at their newest releases ([tool.goodopt] in pyproject.toml, lower bounds only), then goodopt without resolving
# again; 'make lock' then records them.
LATEST := .venv-latest
test-latest:
	@test -x $(LATEST)/bin/python || $(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip setuptools wheel
	$(LATEST)/bin/python -m pip install --quiet --upgrade $$($(LATEST)/bin/python .ci/pins.py uncapped)
	PYTHONWARNINGS="ignore:Editable installation" $(LATEST)/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(LATEST)/bin/python -m pytest -m "not slow" $(PYTEST_ARGS)

# 'make lock' records the versions test-latest passed with, hashed for every platform (uv pip compile), in
# requirements.txt (pip's format, which the venv installs) and in pylock.toml (the standard lock file, PEP 751),
# and pins them in pyproject.toml: the packages goodopt runs with as its dependencies, the test tools and theirs
# as the 'test' extra, the build tools as the build requirements (.ci/pins.py locked)
lock: test-latest
	$(LATEST)/bin/python -m pip freeze --all --exclude-editable | grep -iv '^goodopt\|^pip=' > $(LOCK).pins
	$(LATEST)/bin/python -m pip install --quiet uv
	$(LATEST)/bin/python .ci/pins.py uncapped | tr ' ' '\n' > $(LOCK).in
	printf 'setuptools>=69\nwheel\n' > $(LOCK).build
	{ grep '^#' $(LOCK); $(LATEST)/bin/uv pip compile $(LOCK).in $(LOCK).build -c $(LOCK).pins \
	    --generate-hashes --universal --python-version 3.11 --no-header --no-annotate --quiet; } > $(LOCK).new
	$(LATEST)/bin/uv pip compile $(LOCK).in $(LOCK).build -c $(LOCK).pins --universal \
	    --python-version 3.11 --no-header --quiet -o pylock.toml
	rm $(LOCK).pins $(LOCK).in $(LOCK).build
	mv $(LOCK).new $(LOCK)
	$(LATEST)/bin/python .ci/pins.py locked

# GOODOPT_LOCKED=1: the suite checks that this venv holds exactly the locked versions
test: $(STAMP)
	GOODOPT_LOCKED=1 $(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

# ruff on every Python file (pyflakes, import order, bugbear, pyupgrade), then mypy on the package (strict on
# every module); the rules and their exceptions are in pyproject.toml. mypy reads the package through a
# tree of links shaped like the installed one (goodopt.solvers is the top-level solvers/ folder, and so on), made
# afresh in the venv each time.
TYPES := $(VENV)/typecheck
lint: $(STAMP)
	$(BIN)/ruff check .
	rm -rf $(TYPES) && mkdir -p $(TYPES)/goodopt
	cp -rs $(CURDIR)/goodopt/. $(TYPES)/goodopt/
	for d in formulations solvers scenarios paper_figures; do ln -s $(CURDIR)/$$d $(TYPES)/goodopt/$$d; done
	cd $(TYPES) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml --cache-dir $(CURDIR)/$(VENV)/mypy-cache \
	    -p goodopt

test-slow: $(STAMP)
	GOODOPT_LOCKED=1 $(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

test-all: $(STAMP)
	GOODOPT_LOCKED=1 $(BIN)/python -m pytest $(PYTEST_ARGS)

figures: $(STAMP)
	GOODOPT_MATH=$(FIGURES_MATH) $(BIN)/python -m paper_figures $(FIGURE_ARGS)

# one figure alone, e.g. make fig5 (its tables, plots and the index)
$(FIGS): $(STAMP)
	GOODOPT_MATH=$(FIGURES_MATH) $(BIN)/python -m paper_figures --only $@ $(FIGURE_ARGS)

# the README's picture, docs/exact_vs_heuristic.png: figure 4 at the default scale, put in place whole
DOCS_FIGURE := docs/exact_vs_heuristic.png
docs-figure: fig4
	cp paper_figures/out/exact_vs_heuristic.png $(DOCS_FIGURE).tmp
	mv $(DOCS_FIGURE).tmp $(DOCS_FIGURE)

# make bench BENCH_ARGS="--only exact --against bench_out_0.1.0": parts, and an earlier run to compare with
bench: $(STAMP)
	$(BIN)/python -m goodopt.bench $(BENCH_ARGS)

# The documentation site (site/): MkDocs Material, the API reference read from the docstrings by mkdocstrings,
# the tutorials run by goodopt's venv as the site is built (docs/hooks.py), strict: a broken link or reference
# fails the build. Its tools live in their own venv from their own lock (docs/requirements.txt); mkdocstrings
# reads the package through a tree of links laid out as it is imported (as mypy does below).
DOCS_VENV  := .venv-docs
DOCS_STAMP := $(DOCS_VENV)/.installed
$(DOCS_STAMP): docs/requirements.txt
	@test -x $(DOCS_VENV)/bin/python || $(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -m pip install --quiet --require-hashes -r docs/requirements.txt
	@touch $(DOCS_STAMP)

docs: $(STAMP) $(DOCS_STAMP)
	rm -rf $(DOCS_VENV)/src && mkdir -p $(DOCS_VENV)/src/goodopt
	cp -rs $(CURDIR)/goodopt/. $(DOCS_VENV)/src/goodopt/
	for d in formulations solvers scenarios paper_figures; do ln -s $(CURDIR)/$$d $(DOCS_VENV)/src/goodopt/$$d; done
	NO_MKDOCS_2_WARNING=1 GOODOPT_PYTHON=$(abspath $(BIN)/python) $(DOCS_VENV)/bin/mkdocs build --strict --quiet -d site

# the docs lock again from docs/requirements.in, against goodopt's lock (uv in the docs venv)
docs-lock: $(DOCS_STAMP)
	$(DOCS_VENV)/bin/python -m pip install --quiet uv
	grep -v '^ *#\|^ *--hash' $(LOCK) | sed 's/ *\\$$//' > $(DOCS_VENV)/constraints.txt
	{ sed -n '1,3p' docs/requirements.txt; $(DOCS_VENV)/bin/uv pip compile docs/requirements.in \
	    -c $(DOCS_VENV)/constraints.txt --generate-hashes --universal --python-version 3.11 --no-header \
	    --no-annotate --quiet; } > docs/requirements.new
	mv docs/requirements.new docs/requirements.txt

# The benchmark library's large tier (every family up to 2048 GPUs, seeds 0-2, both objectives), built and
# certified in library_out/large, then verified; the small tier is shipped in scenarios/library
library: $(STAMP)
	$(BIN)/goodopt library build library_out/large --tier large
	$(BIN)/goodopt library verify library_out/large

# The papers' headline experiments on the published traces, beside the published numbers
# (reproduce_out/report.md; QUICK=1: one workload per setting, minutes).
reproduce: $(STAMP)
	$(BIN)/goodopt reproduce --out reproduce_out --traces $(GOODOPT_TRACES) $(if $(QUICK),--quick,)

# Re-fit the shipped application profiles from the published traces.
fit: $(STAMP)
	$(BIN)/goodopt fit --traces $(GOODOPT_TRACES) --out scenarios/profiles

clean:
	rm -rf $(VENV) $(LATEST) $(DOCS_VENV) site build *.egg-info paper_figures/out paper_figures/out-tiny paper_figures/out-full library_out .pytest_cache .hypothesis
