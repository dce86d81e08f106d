"""Constants a kernel of this package imports by its absolute package name."""

SCALE = 3.0
