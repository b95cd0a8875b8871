from kflow.components.datasets.csv.ingest.component import CsvIngest

__all__ = ["CsvIngest"]
