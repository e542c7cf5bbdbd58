# goodopt: every target creates or refreshes the local virtual environment first.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
GOODOPT_TRACES ?= ../shared/traces
export GOODOPT_TRACES

.PHONY: venv test test-slow test-all figures bench fit clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	@touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

test-all: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

figures: $(STAMP)
	$(BIN)/python -m paper_figures

bench: $(STAMP)
	$(BIN)/python -m goodopt.bench

# Re-fit the shipped application profiles from the published traces.
fit: $(STAMP)
	$(BIN)/goodopt fit --traces $(GOODOPT_TRACES) --out scenarios/profiles

clean:
	rm -rf $(VENV) build *.egg-info paper_figures/out .pytest_cache .hypothesis
