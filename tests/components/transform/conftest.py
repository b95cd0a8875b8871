"""The fruit table (tests/components/datasets/tabular/test_tabular.py) ingested once, and its TransformGraph."""

from __future__ import annotations

import pytest

from kflow.components.datasets.csv.ingest.executor import run as ingest
from kflow.components.transform.executor import run as transform
from kflow.pipeline.dsl.artifacts import Examples, Rejects, Schema, TransformGraph
from tests.components.datasets.tabular.test_tabular import fruit_rows

OPTIONS = {"max_categories": 5}


@pytest.fixture(scope="module")
def fruit(tmp_path_factory):
    root = tmp_path_factory.mktemp("fruit")
    source = root / "fruit.csv"
    source.write_text("\n".join(["id,colour,weight,organic,notes,label", *fruit_rows()]) + "\n")
    examples, schema = Examples(root / "examples"), Schema(root / "schema")
    ingest(
        examples=examples,
        schema=schema,
        rejects=Rejects(root / "rejects"),
        source_path=str(source),
        label="label",
        key="id",
    )
    graph = TransformGraph(root / "graph")
    summary = transform(examples=examples, schema=schema, transform_graph=graph, dataset="csv", options=OPTIONS)
    return examples, schema, graph, summary, root
