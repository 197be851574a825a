"""The release layer: what the consumers of a release (attacks, learners, metrics, the
estimators and the report) may rely on, named as typed views (:mod:`privlab.release.views`),
and the release family's base (:mod:`privlab.release.base`: ``Release``, ``Custody``,
``EngineRelease``, ``load_release``), which each sanitizer's release class extends.

It lies above :mod:`privlab.data` and below everything that reads a release, so that
:mod:`privlab.publish` (which makes releases), :mod:`privlab.attacks` and
:mod:`privlab.learn` stay independent siblings: a consumer names the view it needs, never
the class that publish builds.
"""

from __future__ import annotations

from privlab.release.views import Grouped, MaxEnt, Membership, Randomized, ReleaseView

__all__ = ["Grouped", "MaxEnt", "Membership", "Randomized", "ReleaseView"]
