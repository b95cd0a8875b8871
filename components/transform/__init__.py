from kflow.components.transform.component import Transform

__all__ = ["Transform"]
