"""Models of the lab; all are `RoutedModel`s that run any route of their blocks."""

from lab.core.models.base import Route, RoutedModel, accuracy, correct, logits_of, per_class_accuracy
from lab.core.models.mlp import MLP, MLPConfig
from lab.core.models.vit import ViT, ViTConfig

__all__ = ["MLP", "MLPConfig", "Route", "RoutedModel", "accuracy", "correct", "logits_of", "per_class_accuracy", "ViT",
           "ViTConfig"]
