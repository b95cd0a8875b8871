from kflow.components.statistics_gen.component import StatisticsGen

__all__ = ["StatisticsGen"]
