"""privlab's exceptions and warnings.

Every error privlab raises on bad input is a :class:`PrivlabError` whose message names the
offending value, so that the CLI can print it as one line.
"""

from __future__ import annotations


class PrivlabError(ValueError):
    """Base class of every error privlab raises on bad input or impossible parameters."""


class SchemaError(PrivlabError):
    """Unknown column, duplicate role, attribute listed twice, value outside its domain."""


class MissingValuesError(PrivlabError):
    """A column holds missing values and the caller did not ask to drop them."""


class ParameterError(PrivlabError):
    """A parameter is out of range (l < 2, epsilon <= 0, p outside [0, 1], ...)."""


class EligibilityError(PrivlabError):
    """The table cannot satisfy the requested privacy model (e.g. not l-eligible)."""


class ReleaseError(PrivlabError):
    """A directory is not a valid release, or a release file does not match its partner."""


class CustodyError(ReleaseError):
    """A custody directory is missing, malformed, or belongs to another release."""


class HierarchyError(PrivlabError):
    """A hierarchy is malformed (ragged rows, not a tree) or lacks a value of its attribute."""


class MatrixError(ParameterError):
    """A transition matrix is not square, not stochastic, singular, or of the wrong size."""


class OutputExistsError(PrivlabError):
    """An output path exists and overwriting was not requested."""


class MissingDependencyError(PrivlabError, ImportError):
    """An optional third-party package (e.g. anonymeter) is not installed; the message says
    how to install it."""


class PrivacyWarning(UserWarning):
    """A choice that may leak information (a secret-dependent parameter, a fixed seed, ...)."""


class SpreadsheetWarning(PrivacyWarning):
    """Cells that a spreadsheet would run as formulas (a leading ``=``, ``+``, ``-``, ``@``,
    tab or carriage return) were written to a CSV with a leading ``'``
    (:mod:`privlab._csv`); privlab's readers remove it."""


class ExperimentWarning(PrivacyWarning):
    """A release or DP output drawn from the caller's own random stream (a numpy
    ``Generator``, a ``SeedSequence``, a seed record not produced by ``Custody.replay()``):
    an experiment, which anyone who guesses the seed can replay; ``save()`` refuses it unless
    told ``not_for_publication=True``."""


class RepublicationError(PrivlabError):
    """A new release of an input the registry already holds a release of, without the
    custodian's acknowledgement (``republish=True``, CLI ``--republish``)."""


class BudgetExceededError(PrivlabError):
    """A differentially private computation would spend more epsilon than the budget holds."""


class Interrupted(BaseException):
    """A signal (SIGINT, SIGTERM, SIGHUP) stopped privlab; ``committed`` lists the outputs
    already in place.  A ``BaseException``, so that no ``except Exception`` swallows it."""

    def __init__(self, signum: int, committed: tuple = ()) -> None:
        super().__init__(signum)
        self.signum = signum
        self.committed = committed


class MemoryBudgetError(PrivlabError):
    """A computation would need more memory than is available; refused before it starts."""


class ConvergenceWarning(UserWarning):
    """A Markov chain (the deFinetti attack) has not converged: its probabilities are not
    reliable."""
