"""Typed values: objects read piece by piece from their locations (`objects`), printed as GDB prints them
(`format`): `{a = 1, b = 2}`, `<repeats N times>`, `<optimized out>`, `<unavailable>`."""
