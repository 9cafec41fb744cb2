"""Placeholder until the model is written."""


def specs():
    return []
