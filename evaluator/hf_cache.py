"""Benchmark datasets on workers without a model hub: the Hugging Face `datasets` cache, read offline.

A worker evaluates the real tasks (inspect_evals' gsm8k, ...), which load their datasets with
`datasets.load_dataset("<repo>", ...)`. Offline (`HF_DATASETS_OFFLINE=1`) `datasets` reads the copy in its cache,
`$HF_DATASETS_CACHE/<namespace>___<name>/<config id>/<version>/<hash>/` (`dataset_info.json` and
`<name>-<split>.arrow` files; datasets' `load.CachedDatasetModuleFactory` and `packaged_modules/cache`). A worker
gets that copy as the harness's machines do (`containers/download_hf_cache/`): loaded once where the hub is
reachable and the cache folder carried over. This module

* writes such a cache from rows (`write_dataset_cache`, with datasets' own ArrowWriter and DatasetInfo), which is
  how tests and the demo get small copies of each benchmark's dataset;
* describes *local datasets*: folders under PTB_LOCAL_DATASETS_DIR holding a cache plus a `ptb-dataset.json`
  ({"benchmark", "description", "synthetic", "rows": {split: n}}), which the rerun form offers and a job may name
  as its dataset (the worker then uses that folder as its `HF_DATASETS_CACHE`);
* gives an attempt process its environment (`attempt_environment`).

Only `write_dataset_cache` imports `datasets` (workers); the rest is read by the web server.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.benchmarks import BENCHMARKS, HfDataset

MANIFEST = "ptb-dataset.json"


def _snake(name: str) -> str:
    # datasets.naming.camelcase_to_snakecase, which names the cache folder and files (no datasets import here)
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z\d])([A-Z])", r"\1_\2", name).lower()


def config_id(dataset: HfDataset) -> str:
    """The config folder `datasets` looks for offline: the config name (default "default"), plus
    "-data_dir=<dir>" when the task passes a data_dir (datasets' BuilderConfig.create_config_id)."""
    base = dataset.name or "default"
    return f"{base}-data_dir={dataset.data_dir}" if dataset.data_dir else base


def write_dataset_cache(cache_dir: Path, dataset: HfDataset, rows: dict[str, list[dict[str, Any]]]) -> Path:
    """Write ``rows`` (split -> records in the hub dataset's own fields) as `datasets` caches a download of
    ``dataset``, under ``cache_dir`` (a `HF_DATASETS_CACHE`); returns the folder holding `dataset_info.json`.

    The hash folder is the dataset's pinned revision, else a sha1 of the rows. Raises ValueError for a split
    the task reads that ``rows`` lacks, or for an empty split.
    """
    from datasets import Dataset, DatasetInfo, SplitDict, SplitInfo
    from datasets.arrow_writer import ArrowWriter

    missing = [s for s in dataset.splits if not rows.get(s)]
    if missing:
        raise ValueError(f"{dataset.repo}: rows needed for split(s) {', '.join(missing)}")
    namespace, _, repo_name = dataset.repo.rpartition("/")
    name = _snake(repo_name)
    digest = dataset.revision or hashlib.sha1(json.dumps(rows, sort_keys=True).encode()).hexdigest()
    folder = cache_dir / "___".join(filter(None, [namespace, name])) / config_id(dataset) / "0.0.0" / digest
    folder.mkdir(parents=True, exist_ok=True)
    splits = SplitDict(dataset_name=name)
    features = None
    for split, records in rows.items():
        table = Dataset.from_list(records)
        features = table.features
        with ArrowWriter(path=str(folder / f"{name}-{split}.arrow"), features=table.features) as writer:
            writer.write_table(table.data.table)
            count, size = writer.finalize()
        splits.add(SplitInfo(name=split, num_bytes=size, num_examples=count, dataset_name=name))
    DatasetInfo(dataset_name=name, config_name=config_id(dataset), features=features, splits=splits,
                version="0.0.0").write_to_directory(str(folder))
    return folder


@dataclass(frozen=True)
class LocalDataset:
    """A local dataset folder: ``path`` (as the workers see it), its benchmark, description, whether it is
    synthetic (made up for a demo or test, not the benchmark's real data), and rows per split."""

    path: Path
    benchmark: str
    description: str
    synthetic: bool
    rows: dict[str, int]

    def label(self) -> str:
        counts = ", ".join(f"{n} {split}" for split, n in self.rows.items())
        return f"{self.description} ({counts}{', synthetic' if self.synthetic else ''})"


def write_local_dataset(folder: Path, *, benchmark: str, rows: dict[str, list[dict[str, Any]]], description: str,
                        synthetic: bool) -> LocalDataset:
    """A local dataset folder for ``benchmark``: its Hugging Face cache (write_dataset_cache) and the
    ptb-dataset.json manifest. Raises KeyError for an unknown benchmark, ValueError for one without a Hugging
    Face dataset (the judged ones) or missing splits."""
    spec = BENCHMARKS[benchmark]
    if spec.dataset is None:
        raise ValueError(f"{benchmark} has no Hugging Face dataset: pass its JSONL as the job's dataset instead")
    write_dataset_cache(folder, spec.dataset, rows)
    manifest = {"benchmark": benchmark, "description": description, "synthetic": synthetic,
                "dataset": spec.dataset.repo, "rows": {split: len(r) for split, r in rows.items()}}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return read_local_dataset(folder)


def read_local_dataset(folder: Path) -> LocalDataset:
    """The LocalDataset in ``folder``; raises ValueError naming the file when its manifest is missing or bad."""
    path = folder / MANIFEST
    try:
        data = json.loads(path.read_text())
        return LocalDataset(path=folder, benchmark=str(data["benchmark"]), description=str(data["description"]),
                            synthetic=bool(data.get("synthetic", False)),
                            rows={str(k): int(v) for k, v in dict(data.get("rows", {})).items()})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a local dataset manifest ({exc})") from exc


def local_datasets(root: Path, benchmark: str | None = None) -> list[LocalDataset]:
    """The local datasets under ``root`` (one folder each), of ``benchmark`` if given, by folder name; folders
    without a readable manifest are skipped."""
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        try:
            local = read_local_dataset(folder)
        except ValueError:
            continue
        if benchmark is None or local.benchmark == benchmark:
            found.append(local)
    return found


def attempt_environment(dataset_path: Path | None, scratch: Path) -> dict[str, str]:
    """Environment variables for one evaluation attempt's process.

    Always offline (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE, TRANSFORMERS_OFFLINE). With a local dataset folder:
    HF_DATASETS_CACHE is that folder, and XDG_CACHE_HOME a folder under ``scratch``, because inspect-ai keeps
    its own copy of every dataset it loaded, keyed by name (`~/.cache/inspect_ai/hf_datasets`), and must
    neither read another source's copy of "openai/gsm8k" nor leave this one for later jobs.
    """
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if dataset_path is not None and dataset_path.is_dir():
        env["HF_DATASETS_CACHE"] = str(dataset_path)
        env["XDG_CACHE_HOME"] = str(scratch / "xdg-cache")
    return env
