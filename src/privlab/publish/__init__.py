"""Sanitizers: each module turns a Table into a frozen Release with save/load."""

from privlab.publish.anatomy import AnatomyRelease, anatomize
from privlab.publish.release import load_release, read_meta

__all__ = ["AnatomyRelease", "anatomize", "load_release", "read_meta"]
