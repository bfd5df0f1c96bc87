"""The demo-data generator: seeded, realistic PostTrainBench results trees for demos, tests and benchmarks.
Test tooling, not product code: no product app imports it (an import-linter contract, pyproject.toml)."""
