"""Compiles kflow pipelines to Kubeflow Pipelines v2 IR YAML; sees components only as specs."""

from kflow.pipeline.compiler.pipeline_builder import build_kfp_pipeline, compile_pipeline
from kflow.pipeline.compiler.settings import KubeflowSettings, load_compile_config

__all__ = ["KubeflowSettings", "build_kfp_pipeline", "compile_pipeline", "load_compile_config"]
