"""Tabular classification and regression: what the csv, parquet, tfrecord and tfds datasets share.

Their bundle (dataset.py), their ingests' parameters (table_spec.py) and executor skeleton (table_ingest.py),
the columns and Examples they write, and the task and metrics: any ingest whose schema tags its label
(`role=label`, `task=...`) can use them.
"""
