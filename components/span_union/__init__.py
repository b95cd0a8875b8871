from kflow.components.span_union.component import SpanUnion

__all__ = ["SpanUnion"]
