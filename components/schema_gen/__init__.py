from kflow.components.schema_gen.component import SchemaGen

__all__ = ["SchemaGen"]
