"""Builders for the example GPU state dumps: one model per example kernel, one shared engine."""
