"""Tabular classification and regression: the task and metrics of the csv dataset.

Any ingest whose schema tags its label (`role=label`, `task=...`) can use them.
"""
