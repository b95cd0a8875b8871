from kflow.components.example_validator.component import ExampleValidator

__all__ = ["ExampleValidator"]
