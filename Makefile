# Annie: `make run` sets up what is missing and starts Annie; `make test` runs the suite.
.PHONY: run test setup doctor bench lint clean

VENV := .venv

setup:
	@bash scripts/setup.sh

run: setup
	@$(VENV)/bin/annie serve

test: setup
	@bash scripts/test-deps.sh
	@bash scripts/test.sh

doctor: setup
	@$(VENV)/bin/annie doctor

bench: setup
	@$(VENV)/bin/python -m benchmarks.vector_index

lint:
	@$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache
