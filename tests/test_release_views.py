"""The release layer's typed views (privlab.release.views): every kind of release is the
view its consumers name, a loaded one as much as a fresh one, and the attacks that check
a view refuse what is not one."""

from __future__ import annotations

import numpy as np
import pytest

import privlab
from privlab.attacks.alphabeta import alphabeta_attack
from privlab.attacks.marginals import marginals_attack
from privlab.errors import ReleaseError
from privlab.publish import load_release
from privlab.publish.marginals import publish_marginals
from privlab.publish.randomization import m_category_matrix, randomize
from privlab.release import Grouped, MaxEnt, Membership, Randomized, ReleaseView

QI = ["workclass", "relationship", "sex", "salary"]


@pytest.fixture(scope="module")
def releases():
    adult = privlab.load_adult().take(np.arange(600))
    small = adult.select(["workclass", "sex", "occupation"])
    return {
        "anatomy": privlab.anatomize(adult, qi=QI, sensitive="occupation", l=2, rng=1),
        "generalization": privlab.generalize(
            adult, qi=["sex", "race"], sensitive="occupation", k=5, dataset="adult"
        ),
        "pram": randomize(
            small,
            {"sex": m_category_matrix(2, 0.3)},
            keep=["workclass"],
            rng=np.random.default_rng(0),
        ),
        "alphabeta": privlab.alphabeta(small, alpha=0.5, beta=0.001, rng=2),
        "marginals": publish_marginals(
            adult.select(["sex", "race", "salary"]),
            qi=["sex", "race"],
            sensitive="salary",
            k=5,
            l=1.5,
            dataset="adult",
        ),
    }


VIEWS = {
    "anatomy": Grouped,
    "generalization": Grouped,
    "pram": Randomized,
    "alphabeta": Membership,
    "marginals": MaxEnt,
}


@pytest.mark.parametrize("kind", sorted(VIEWS))
def test_each_release_is_the_view_its_consumers_name(releases, kind):
    rel = releases[kind]
    assert rel.method == kind
    assert isinstance(rel, ReleaseView) and isinstance(rel, VIEWS[kind])


def test_the_views_tell_the_kinds_apart(releases):
    """A view asks for members only its kind has: PRAM's blocks, alpha-beta's membership
    posterior, the marginals' max-ent estimate."""
    for kind, rel in releases.items():
        assert isinstance(rel, Randomized) == (kind == "pram")
        assert isinstance(rel, Membership) == (kind == "alphabeta")
        assert isinstance(rel, MaxEnt) == (kind == "marginals")
    assert not isinstance(object(), ReleaseView)


def test_a_release_loaded_from_disk_is_its_view(releases, tmp_path):
    rel = releases["anatomy"]
    rel.save(tmp_path / "rel", custody=tmp_path / "custody")
    back = load_release(tmp_path / "rel")
    assert isinstance(back, Grouped) and back.partition() is not None


def test_the_checking_attacks_refuse_another_view(releases):
    with pytest.raises(ReleaseError, match="needs an alpha-beta release, not a 'anatomy'"):
        alphabeta_attack(releases["anatomy"])
    with pytest.raises(ReleaseError, match="needs an anonymized-marginals release, not a 'pram'"):
        marginals_attack(releases["pram"], releases["pram"].table)
    assert alphabeta_attack(releases["alphabeta"]).n_rows == releases["alphabeta"].n_rows
