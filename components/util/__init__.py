"""Helpers that several components share."""
