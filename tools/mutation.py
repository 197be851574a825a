"""Mutation testing of privlab's privacy-critical modules (issue 20; ``make mutation``).

For each module this script parses the source with :mod:`ast`, enumerates mutants of a fixed
set of operator kinds, picks a seeded sample of ``N`` of them (default 60; a new random seed
on every run, printed, unless ``--seed`` replays one), and runs the test files that cover the
module (:data:`MODULES`, the per-module test map) against each mutant, with a per-mutant
timeout.  A mutant is *killed* when the
tests fail, *survives* when they pass, and *times out* when they run longer than a limit
derived from the unmutated run (an endless loop: counted as detected, shown separately).

Operator kinds
--------------
``cmp``     a comparison flipped: ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``,
            ``is`` <-> ``is not``, ``in`` <-> ``not in``
``arith``   ``+`` <-> ``-`` and ``*`` <-> ``/`` (also in ``+=``, ``*=``, ...)
``const``   a number: ``0`` <-> ``1``, any other ``c`` -> ``c + 1``
``bool``    ``and`` <-> ``or``
``return``  ``return X`` -> ``return None``
``negate``  the condition of an ``if``, ``while`` or conditional expression negated

Docstrings, f-strings and annotations are not mutated.

Safety: the worktree is never modified.  ``src/``, ``tests/`` and ``pyproject.toml`` are
copied once into a temporary directory (so a run tests one snapshot, whatever is edited
meanwhile); each mutant is written into that copy (and the original written back in a
``finally``), and pytest runs there with the copy first on ``PYTHONPATH`` (a small pytest
plugin checks that ``privlab`` really is imported from the copy and turns off Hypothesis'
example database, so runs are reproducible).  The copy is deleted on exit, Ctrl-C included.

Score = (killed + timed out) / (mutants - equivalent), per module.  Equivalent mutants
(no behaviour change; confirmed by hand) are listed in :data:`EQUIVALENT` by their stable
id with the reason, and excluded.  A mutant id hashes the enclosing function, the kind,
the original and mutated source text and the occurrence number, so it survives unrelated
edits of the module; the sample is also chosen by hashing ids, so it is stable too.

Usage::

    python tools/mutation.py                      # all modules, 60 mutants each, new seed
    python tools/mutation.py -m em -m estimators  # some modules (by stem)
    python tools/mutation.py --modules risk,histogram --per-module 8 --seed 123 --table t.md
    python tools/mutation.py --check-equivalent   # run every EQUIVALENT entry; report stale ones
    python tools/mutation.py --list -m em         # list the sampled mutants, run nothing
    python tools/mutation.py --id em-1a2b3c4d     # run single mutants
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: module -> the tests run against its mutants (pytest arguments, relative to the root; the
#: fast targeted tests first, so that ``-x`` stops a killed mutant's run early).
MODULES: dict[str, list[str]] = {
    "src/privlab/dp/mechanisms.py": [
        "tests/test_mutation_kills.py::TestMechanisms",
        "tests/test_dp_mechanisms.py",
    ],
    "src/privlab/publish/anatomy.py": [
        "tests/test_mutation_kills.py::TestAnatomy",
        "tests/test_anatomy.py",
    ],
    # Anatomy's algorithm, moved out of anatomy.py below its engines (issue 32)
    "src/privlab/publish/anatomy_core.py": [
        "tests/test_mutation_kills.py::TestAnatomy",
        "tests/test_anatomy.py",
        "tests/test_anatomy_kernel.py",
    ],
    "src/privlab/metrics/privacy.py": [
        "tests/test_mutation_kills.py::TestPrivacy",
        "tests/test_privacy_metrics.py",
    ],
    "src/privlab/attacks/em.py": [
        "tests/test_mutation_kills.py::TestEM",
        "tests/test_limits.py::test_em_counts_above_their_cap_are_refused",
        "tests/test_attacks.py::test_em_exact_e_step_equals_brute_force",
        "tests/test_attacks.py::test_calibrated_marginals_match_closed_form",
        "tests/test_attacks.py::test_hungarian_equals_brute_force",
        "tests/test_attacks.py::test_em_learns_and_restarts_are_recorded",
        "tests/test_attacks.py::test_em_monotone_log_posterior",
        "tests/test_attacks.py::test_bad_parameters_name_the_value",
        "tests/test_attacks.py::test_restrict_to_groups",
    ],
    "src/privlab/dp/estimators.py": [
        "tests/test_mutation_kills.py::TestEstimators",
        "tests/test_dp_estimators.py",
    ],
    # issue 31: every module that publishes, measures risk, spends budget or decides a verdict
    "src/privlab/report/build.py": [
        "tests/test_report.py",
        "tests/test_report_models.py",
        "tests/test_top_level.py::test_notebook_views_escape_what_comes_from_the_data",
    ],
    "src/privlab/publish/randomization.py": [
        "tests/test_pram.py",
        "tests/test_pram_partial_block.py",
    ],
    # PRAM's draws and matrix blocks, below its engines (issue 32)
    "src/privlab/publish/pram_core.py": [
        "tests/test_pram.py",
        "tests/test_pram_partial_block.py",
        "tests/test_stream.py",
    ],
    "src/privlab/metrics/risk.py": [
        "tests/test_mutation_kills.py::TestPrivacy",  # unique_share (moved from privacy.py)
        "tests/test_identity_risk.py",
        "tests/test_generalization.py",
    ],
    "src/privlab/attacks/definetti.py": [
        "tests/test_attacks.py::test_a_chain_statistic_sees_each_chain_in_the_posteriors_rows",
        "tests/test_population_attack.py",
        "tests/test_anneal.py",
        "tests/test_limits.py::test_the_memory_estimate_counts_what_latent_membership_adds",
        "tests/test_limits.py::test_definetti_counts_above_their_cap_are_refused",
        "tests/test_limits.py::test_definetti_counts_at_their_cap_are_accepted",
        "tests/test_limits.py::test_until_converged_stops_before_a_stage_that_would_not_fit",
    ],
    "src/privlab/publish/generalization.py": [
        "tests/test_generalization.py",
        "tests/test_generalization_layout.py",
    ],
    # generalization's release type, hierarchies and search, below its engines (issue 32)
    "src/privlab/publish/generalization_core.py": [
        "tests/test_generalization.py",
        "tests/test_generalization_layout.py",
    ],
    "src/privlab/dp/histogram.py": [
        "tests/test_dp_counts.py",
        "tests/test_stream.py",
        # the Spark engine's path (last: a JVM starts; only a surviving mutant gets there)
        "tests/test_spark.py::test_histogram_same_seed_same_release",
        "tests/test_spark.py::test_histogram_refuses_domain_read_from_data",
    ],
    "src/privlab/publish/alpha_beta.py": [
        "tests/test_alphabeta.py",
        "tests/test_alphabeta_attack.py",
    ],
    "src/privlab/dp/samplers.py": [
        "tests/test_mutation_kills.py::TestMechanisms",
        "tests/test_dp_mechanisms.py",
    ],
    "src/privlab/dp/accountant.py": ["tests/test_dp_accountant.py"],
    # run with NUMBA_DISABLE_JIT=1 (ENV): the samplers' tests, the EM's marginals (the whole of
    # test_attacks.py takes 94 s without the JIT), the population attack's collapsed sampler
    "src/privlab/attacks/_kernels.py": [
        "tests/test_kernel_paths.py",
        "tests/test_anneal.py",
        "tests/test_attacks.py::test_em_exact_e_step_equals_brute_force",
        "tests/test_attacks.py::test_calibrated_marginals_match_closed_form",
        "tests/test_population_attack.py",
    ],
}

#: Hand-confirmed equivalent mutants: id -> why the behaviour cannot change.
EQUIVALENT: dict[str, str] = {
    "mechanisms-4da305ec": (
        "`scale.denominator == 0` never holds, so an integer scale below 2^20 takes "
        "s = 2^20, t = scale * 2^20 instead of s = 1, t = scale: the same ratio t/s, hence the "
        "same exact discrete-Laplace distribution, scale and alpha for Geometric and Laplace, "
        "which both use t/s since issue 31 (before it, Laplace used t alone and this mutant "
        "made Laplace(5, sensitivity=3).scale 629146: not equivalent then, and killed by "
        "test_laplace_scale_is_sensitivity_over_epsilon_at_any_epsilon; the same defect gave "
        "non-integer ratios 2^20 times too much noise, e.g. Laplace(2).scale = 524288.5)"
    ),
    "mechanisms-56452c58": (
        "with epsilon = inf, also marking zero-width ranges of the top score changes nothing: "
        "their weight is their width, 0 (the top score is taken over non-empty ranges, so "
        "the weights never all vanish)"
    ),
    "privacy-e236d9fc": (
        "`< 1e-12` instead of `<= 1e-12` differs only when |total - 1| is exactly 1e-12, "
        "where normalizing changes the reference by a relative 1e-12"
    ),
    "privacy-c3f58f86": (
        "`abs(total + 1) <= 1e-12` never holds (total > 0 is checked), so a reference that "
        "sums to 1 within 1e-12 is divided by its total: it changes by a relative 1e-12 at most"
    ),
    "privacy-cb35ee6a": (
        "`k == 1 or uniques > 0` equals `k == 1 and uniques > 0` on every report "
        "privacy_report builds: a class of size 1 exists (uniques > 0) exactly when k == 1"
    ),
    "em-46f59b9b": (
        "`>=` keeps the last of restarts whose log posteriors are exactly equal instead of "
        "the first: either fit has the highest log posterior, which is what run_em promises "
        "(not a bug; no test can force an exact tie between different fits)"
    ),
    "estimators-54d13fbd": (
        "the factor for ||x||^2 = 0: x = 0 (factor * 0 = 0 either way) or |x_i| < 1e-154 "
        "(the square underflows), where x and 0 differ by less than 1e-154"
    ),
    "generalization-ee0c5bef": (
        "`<= MAX_RADIX` instead of `< MAX_RADIX` (2^62) lets a run of columns whose joint "
        "domain is exactly 2^62 share one key: its keys 0 .. 2^62 - 1 still fit in int64"
    ),
    "samplers-bc920da3": (
        "the OS path also draws for n == 1: width 0, and numpy's uint64 `word >> 64` is 0, so "
        "r = 0 < 1 is accepted at once and the result is 0 as before (only more OS random "
        "bytes are read, which nothing can observe)"
    ),
    "samplers-c416e3ac": (
        "randbelow(1) then pops a word and returns `word >> 64` = 0 (Python ints): the same "
        "value; the law of every draw is unchanged, only which draws a seed yields (no "
        "contract fixes the scalar path's draws bit for bit; a replay runs the same code)"
    ),
    "anatomy_core-a6704dff": (
        "the residue matching's cost of a pair whose group holds the value, 2R + 1 or 2R - 1 "
        "(R residues): any cost >= R does, since the random costs of the other pairs are each "
        "below 1, so a matching with one more such pair always costs more; the assignment "
        "and so the groups are the same"
    ),
    "anatomy_core-c6e8a83d": (
        "`n > KERNEL_MIN` instead of `>=` runs the Python group formation at exactly "
        "n = KERNEL_MIN: it forms the same groups from the same draws as the compiled one "
        "(tests/test_anatomy_kernel.py checks them identical)"
    ),
    "anatomy_core-06f54cd9": (
        "`not (n >= KERNEL_MIN)`: tables below KERNEL_MIN form their groups in the compiled "
        "kernel and larger ones in Python, the reverse of the rule; both form the same groups "
        "from the same draws (tests/test_anatomy_kernel.py checks them identical), as for "
        "e4ec7a93, 76d46a68 and 90b1ae22, which move the same boundary"
    ),
    "anatomy-d52ca703": (
        "the ST built by the compiled kernel below KERNEL_MIN tuples and by numpy above: the "
        "same (group, value, count) rows either way (tests/test_anatomy.py::"
        "test_the_compiled_sensitive_table_equals_the_python_one), only the speed differs"
    ),
    "anatomy_core-76d46a68": (
        "`KERNEL_MIN = 0 << 18` (0): every table forms its groups and ST in the compiled "
        "kernels, which give the Python path's release for the same generator (tests/"
        "test_anatomy_kernel.py); only the speed of small tables differs"
    ),
    "anatomy_core-45844e85": (
        "`members.shape[1]` (l, never 0) for the number of groups: the refusal is then never "
        "raised, but anatomize reaches this point only after l <= distinct values and "
        "l-eligibility, which leave at least one group of l distinct values (unreachable)"
    ),
    "anatomy_core-2a3e9a85": (
        "the value named by the 'no group lacks' refusal, which an eligible table never "
        "reaches (Xiao & Tao, Lemma 1), and anatomize and the Spark engine refuse an "
        "ineligible one before scheduling a group (unreachable)"
    ),
    "samplers-95d04aba": (
        "the bits-per-draw guess when no draw of the first block finished (4 * 16 -> 4 / 16): "
        "only how many words the next request asks for (at least 64); the draws are a "
        "function of the bit stream alone, not of its chunks (tests/test_dp_mechanisms.py "
        "checks chunked and whole streams equal)"
    ),
    "samplers-159a79fc": (
        "the bits-per-draw guess when no draw of the first block finished (4.0 -> 5.0): only "
        "the size of the next request; the draws are a function of the bit stream alone"
    ),
    "privacy-eceb905c": (
        "the placeholder denominator of a class whose tail is 0 (1.0 -> 0.0): `np.where` then "
        "takes inf for that class whatever the division gave (errors silenced), so every "
        "recursive c is the same"
    ),
    "anatomy_core-90b1ae22": (
        "`KERNEL_MIN = 1 << 19`: tables of 2^18 to 2^19 tuples take the Python group "
        "formation and ST instead of the compiled ones, which give the same release for the "
        "same generator (tests/test_anatomy_kernel.py); only the speed differs"
    ),
    "anatomy_core-13bdde46": (
        "the k-th residue of a value at `starts[v] - k` instead of `+ k`: k is always 0, since "
        "in an l-eligible table (the only kind that reaches the residue step) the residues "
        "hold distinct values (Xiao & Tao 2006), one tuple each"
    ),
    "pram_core-80d9cdee": (
        "`_BUCKETS = 4097`: `u * 4097` is not exact, but floor(u * 4097) puts every slice "
        "edge b/4097 (as a float) in slice b and the float just below it in slice b - 1 "
        "(checked for all 4097 edges) and is monotone in u, so the table's slices, answers "
        "and ambiguity flags are the same partition of [0, 1): the same draws"
    ),
    "pram_core-0f6151e8": (
        "`_KERNEL_MIN = 1 << 24`: draws of 2^23 to 2^24 take the numpy path instead of the "
        "kernel, which give the same output and generator state (tests/test_pram.py)"
    ),
    "pram_core-7563a68c": (
        "the kernel below _KERNEL_MIN draws and numpy above: the same output and generator "
        "state either way (tests/test_pram.py compares them); only the speed differs"
    ),
    "pram_core-a5983752": (
        "the CDF padding 3.0 instead of 2.0: either exceeds every uniform in [0, 1), so no "
        "draw ever counts it"
    ),
    "pram_core-b774b1f8": (
        "the scan also compares the last CDF entry, which is always padding (2.0, set from "
        "the last positive column on): never <= u, so the count is the same"
    ),
    "pram_core-5d815eb5": (
        "lookup table for domains above 64 and binary search below, instead of the reverse: "
        "both give the sequential scan's answer bit for bit (tests/test_pram.py), only the "
        "speed and the table's memory differ"
    ),
    "pram_core-cb042b01": (
        "int32 codes for a matrix of exactly 2^31 values: such a matrix (2^62 entries) "
        "cannot be built"
    ),
    "em-92253b94": (
        "`it = 1` before the loop: fit_em refuses max_iter < 1, so the loop always rebinds it"
    ),
    "generalization_core-76965f09": (
        "the dataclass default of n_input (0 -> 1): every constructor in privlab (memory, "
        "Mondrian, Spark, loading) passes n_input"
    ),
    "generalization-d3bb759c": (
        "`return None` where a release has no custody: _publish always returns a Custody, "
        "so both callers pass one (unreachable)"
    ),
    "pram_core-5b6a1768": (
        "`_scan` also compares the last entry of each padded CDF row, which is 2.0: a "
        "uniform u in [0, 1) is never >= 2.0, so the extra comparison adds nothing"
    ),
    "_kernels-3a2c9a62": (
        "`r > k` instead of `r >= k` in `_below`'s guard: r = int(random() * k) with "
        "random() <= 1 - 2^-53, and (1 - 2^-53) * k rounds below k (exactly representable "
        "for a power of two, else more than half an ulp below), so r == k never happens"
    ),
    "_kernels-188d0589": (
        "`gen.random() <= 0.5` instead of `< 0.5` for the order of a group of 3 whose weights "
        "vanish: they differ only when the uniform is exactly 0.5, which a draw of 53 random "
        "bits meets with probability 2^-53"
    ),
    "_kernels-06b1b1b7": (
        "`base = 1.0` instead of `0.0` before the loop over a repeated-values group's "
        "permutations: the first permutation (p == p_lo) always sets base to its own log "
        "weight before base is read"
    ),
    "_kernels-dc17b4d0": (
        "`u <= w0` instead of `u < w0` in the exact draw of a group of 3: they differ only "
        "when u = random() * w2 equals w0 to the last bit; a uniform of 53 random bits equals"
        " a given double with probability at most 2^-53"
    ),
    "_kernels-bafd5e87": (
        "`u <= w1` instead of `u < w1` in the exact draw of a group of 3: they differ only "
        "when u equals w1 to the last bit; a uniform of 53 random bits equals a given double "
        "with probability at most 2^-53"
    ),
    "_kernels-a5174d18": (
        "`random() * tot <= keep` instead of `<` for the order of the last two of a group of "
        "3: equal only on one double; a uniform of 53 random bits equals a given double with "
        "probability at most 2^-53"
    ),
    "_kernels-242537b6": (
        "`u <= cum[i]` instead of `u < cum[i]` in the exact draw of a group of 4: equal only "
        "on one double; a uniform of 53 random bits equals a given double with probability at"
        " most 2^-53"
    ),
    "_kernels-26742e8f": (
        "`random() * tot <= keep` instead of `<` for the order of the last two of a group of "
        "4: equal only on one double; a uniform of 53 random bits equals a given double with "
        "probability at most 2^-53"
    ),
    "_kernels-0502a703": (
        "`random() <= 0.5` instead of `< 0.5` for the order of the last two of a group of 4 "
        "whose weights vanish: a uniform of 53 random bits equals a given double with "
        "probability at most 2^-53"
    ),
    "_kernels-7a2aa7c3": (
        "`random() * tot <= w_keep` instead of `<` for a group of 2: equal only on one "
        "double; a uniform of 53 random bits equals a given double with probability at most "
        "2^-53"
    ),
    "_kernels-4e145016": (
        "`random() <= 0.5` instead of `< 0.5` for a group of 2 whose weights vanish: a "
        "uniform of 53 random bits equals a given double with probability at most 2^-53"
    ),
    "_kernels-e9e34c1b": (
        "`random() <= exp(delta)` instead of `<` in a pairwise swap's Metropolis test (delta "
        "< 0 there): a uniform of 53 random bits equals a given double with probability at "
        "most 2^-53"
    ),
    "_kernels-e305de1a": (
        "`random() <= exp(new - cur)` instead of `<` in a reshuffle's Metropolis test (new < "
        "cur there): a uniform of 53 random bits equals a given double with probability at "
        "most 2^-53"
    ),
    "_kernels-75680b11": (
        "`random() <= ratio` instead of `<` in the collapsed sampler's swap test (ratio < 1 "
        "there): a uniform of 53 random bits equals a given double with probability at most "
        "2^-53"
    ),
    "_kernels-764062ef": (
        "`random() <= exp(new - cur)` instead of `<` in the collapsed sampler's reshuffle "
        "test (new < cur there): a uniform of 53 random bits equals a given double with "
        "probability at most 2^-53"
    ),
    "_kernels-570193e3": (
        "`v >= mx` instead of `v > mx` while finding a combination's largest score: on a tie "
        "mx takes the same value"
    ),
    "_kernels-189a65f0": (
        "`w >= mx` instead of `w > mx` while finding a row's largest weight: on a tie mx "
        "takes the same value"
    ),
    "_kernels-31998743": (
        "`w >= mx` instead of `w > mx` while finding a row's largest predictive (collapsed "
        "sampler): on a tie mx takes the same value"
    ),
    "_kernels-9d018b62": (
        "`w >= mx` instead of `w > mx` while finding a row's largest score (group marginals):"
        " on a tie mx takes the same value"
    ),
    "_kernels-0edc34f4": (
        "`w >= mx` instead of `w > mx` while finding a row's largest score (marginals by "
        "combination): on a tie mx takes the same value"
    ),
    "_kernels-14c5b41d": (
        "`u <= weights[p]` instead of `u < weights[p]` in the inverse-CDF pick: they differ "
        "only when the uniform times the total equals a cumulative weight to the last bit, "
        "which a draw of 53 random bits meets with probability about 2^-53"
    ),
    "pram_core-b365c2ea": (
        "the kernel's lookup-table and binary-search paths swapped (a table above 64 values, "
        "a search below): the table's answer is only a lower bound that the kernel's forward "
        "scan corrects, so even the one-byte answers of a domain above 256 values, which wrap "
        "to smaller numbers, end at the same code; only the speed differs"
    ),
    "pram_core-cdebfc3f": (
        "the kernel-or-numpy choice made on src.shape[1] * columns instead of rows * columns: "
        "both paths give the same output and leave the generator in the same state "
        "(tests/test_pram.py compares them), so only the speed differs"
    ),
    "pram_core-fa6c4d2b": (
        "`_is_identity` compares with the identity of the matrix's column count instead of "
        "its row count: a transition matrix is square (validate_matrix refuses any other)"
    ),
    "pram_core-228b22e8": (
        "the codes' dtype chosen from the matrix's columns instead of its rows: a transition "
        "matrix is square (validate_matrix refuses any other), so both are its size"
    ),
    "build-4c11621e": (
        "the base table's IPF run with a tolerance of 1 instead of 1e-12: one marginal is "
        "fitted exactly by IPF's first sweep, which always runs; the second sweep the small "
        "tolerance asks for rescales by ratios of 1 (to the last bit)"
    ),
    "generalization-2e43b399": (
        "Mondrian's whole-table reference distribution as counts * n instead of counts / n: "
        "every consumer (`privlab.metrics.privacy._reference`) normalizes a reference that "
        "does not sum to 1, so both give the same shares"
    ),
    "generalization-bd30dd6d": (
        "a domain size of 0 counted as 0 instead of 1 in the sort key's radix: only a column "
        "with an empty domain has size 0, and such a column holds no row (a code must be "
        "below the size), so there is nothing to order"
    ),
    "pram_core-0e607480": (
        "a code checked against the matrix's columns instead of its rows: randomize_columns "
        "refuses a matrix that is not square just before, so both counts are K"
    ),
    "build-53904ac0": (
        "SURVIVAL_X rounded to 3 decimals instead of 2: linspace(0, 1, 101) holds k/100, and "
        "rint(100 x)/100 and rint(1000 x)/1000 are the same correctly rounded k/100"
    ),
    "build-bac62563": (
        "`d.get('at_risk_count', 1)`: every summary passed (the attack's, random worlds', "
        "the control's) carries at_risk_count, so the default is never used"
    ),
    "alpha_beta-e11640e7": (
        "the placeholder denominator where the posterior's is 0 (1.0 -> 0.0): `np.where` "
        "then returns the prior there whatever the division gave (errors silenced)"
    ),
    "build-4b3262b4": (
        "`max(int(truth.size), 1)` -> `max(..., 0)` in _known: the guard only keeps an empty "
        "truth from dividing by zero; evaluate() refuses 0 people right after either way"
    ),
    "build-1b3a4350": (
        "the number of values read from the counts' other axis: m is only bincount's "
        "minlength before argmax, which padding zeros cannot change"
    ),
    "generalization_core-3d79d51e": (
        "the dataclass default of n_suppressed (0 -> 1): every constructor in privlab passes "
        "n_suppressed"
    ),
    "generalization-8f412da9": (
        "`max(4 n, 0 << 20)`: distinct pairs counted by pd.unique instead of bincount for "
        "small domains; both count the same pairs exactly, only the speed differs"
    ),
    "generalization-378a6bac": (
        "a domain size of 0 counted as 0 in the sort key's run length: only an empty "
        "domain has size 0, and its column holds no row, so there is nothing to order"
    ),
    "mechanisms-4cfd863b": (
        "the clamp `len(p) - 0`: u < 1 makes u * c[-1] round strictly below c[-1] (for c[-1] "
        "in [2^e, 2^(e+1)) the gap c[-1] 2^-53 is at least half an ulp, exactly half only at "
        "a power of two, where the float below is c[-1] - 2^(e-53)), so searchsorted never "
        "returns len(p)"
    ),
    "_kernels-e2c6f5a1": (
        "`k + 1` in _below's clamp for `int(u * k) >= k`: with u < 1 the product rounds "
        "strictly below the integer k (its gap k 2^-53 is at least half an ulp, exactly half "
        "only at a power of two, where the float below is representable), so the branch is "
        "never taken"
    ),
    "definetti-bb250ca0": (
        "`no_track` of one position instead of none: it is passed only with keep_from = "
        "`never` (the annealed restarts and the latent runs' kernel calls), and a kernel "
        "records its tracked people only from keep_from on, so no entry of it is ever read"
    ),
    "definetti-53645d14": (
        "a chain's initial `anneal_ll` of one zero instead of none: it is read only once "
        "`annealed` > 0, which the restarts set together with their own `anneal_ll`"
    ),
    "definetti-66af078c": (
        "`max(0, ...)` instead of `max(1, ...)` around the number of worker threads: workers "
        "is refused below 1, chains are at least 1 and `os.cpu_count() or 1` is at least 1, "
        "so the min is at least 1 and the max never acts"
    ),
    "definetti-6560185b": (
        "`os.cpu_count() or 0` for the number of worker threads: it differs only when "
        "cpu_count() is None, and then the outer max(1, ...) still gives 1"
    ),
    "definetti-d8f88334": (
        "`it > anneal` instead of `it >= anneal` before handing the rest of a block to the "
        "chosen kernel: iteration `anneal` then runs as a span of its own, through the same "
        "kernel at anneal_beta(anneal, anneal) = 1.0, and the next span goes on from the same "
        "state and generator (a kernel call draws nothing on entry and recounts the same "
        "assignment), so the draws and the trace are the same"
    ),
    "definetti-21393fdb": (
        "`it >= lo` instead of `it > lo` before copying the restarts' annealed trace: when "
        "it == lo the copy is of the empty slice [lo:lo], which changes nothing"
    ),
    "definetti-e25af01c": (
        "the restarts' annealed trace copied into `loglik[c, lo + start : ...]` instead of "
        "`lo - start`: as for definetti-f15d5ab6, the copy runs only in the first stage, "
        "whose `start` is 0"
    ),
    "definetti-f15d5ab6": (
        "the restarts' annealed trace copied into `loglik[c, lo - start : done + start]` "
        "instead of `done - start`: annealed iterations exist only below `anneal`, which is "
        "at most the first stage's burn-in, and the first stage starts at 0, so `start` is 0 "
        "wherever the copy runs"
    ),
    "definetti-93dea630": (
        "the log-likelihood slice handed to the kernel ends at `b + start` instead of "
        "`b - start`: a longer view of the same row, whose first b - a entries are the only "
        "ones the kernel writes (`loglik[it - it_start]` for it in a..b-1)"
    ),
    "generalization-8e3ce07c": (
        "the row count when no column is given (0 -> 1): every caller passes the published "
        "columns, at least one quasi-identifier, so `len(cols)` is never 0"
    ),
    "pram_core-0c61c95b": (
        "the CDF table's width read from the matrix's rows instead of its columns: PRAM "
        "matrices are square (randomize_columns and the release refuse others)"
    ),
    "samplers-6ee15adf": (
        "the first request's size (`+ 4` -> `+ 5` words): the draws are a function of the "
        "bit stream alone, not of its chunks (tests/test_dp_mechanisms.py)"
    ),
    "pram_core-0e23947a": (
        "`>` instead of `>=` at exactly _KERNEL_MIN draws: numpy's path instead of the "
        "kernel, which give the same output and generator state (tests/test_pram.py)"
    ),
    "build-ea5dfa16": (
        "the default of `_per_value`'s min_count (1 -> 0): its only caller passes min_count"
    ),
    "generalization-76d46a68": (
        "`_RADIX = 0 << 16` (0): `_stable_order` then always takes its last branch, "
        "`np.argsort(rank, kind='stable')`, the order its radix passes compute (only slower)"
    ),
    "definetti-41b6f6f1": (
        "`>=` instead of `>` for the projected time against the budget: differs only when a "
        "sum of perf_counter readings equals the budget to the last bit"
    ),
    "samplers-0827446d": (
        "`pos & 65` in the refill's rate estimate changes only how many words the next chunk "
        "asks for: the draws are a function of the stream alone, not of its chunking (the "
        "docstring's contract, tested by test_dp_mechanisms.py)"
    ),
    "samplers-0a824588": (
        "randbelow: `n < 1` instead of `n <= 1`: as samplers-c416e3ac, randbelow(1) then pops "
        "a word and returns `word >> 64` = 0: the same value and law (only which later draws "
        "a seed yields; a replay runs the same code)"
    ),
    "pram_core-1020b125": (
        "`_KERNEL_BLOCK = 1 << 15` instead of `1 << 14`: only the block length of the "
        "compiled PRAM path changes; each block fills its uniforms by gen.random(out=) in row "
        "order (one 64-bit word per double, whatever the chunk) and each record's answer "
        "depends on its own uniforms only, so the release is the same"
    ),
    "em-25037c93": (
        "max(max_group, 0) == max(max_group, 1): a release has at least one row, so its "
        "largest group has at least one tuple"
    ),
    # issue 31, fourth round (seeds 382190620 and the dp helpers' probes)
    "mechanisms-b813ba07": (
        "at scale exactly 2^20 the scale is an integer, so `denominator == 1` already gives "
        "s = 1: the `>=` / `>` difference at 2^20 is never reached"
    ),
    "mechanisms-2b27a95e": (
        "the guard of line 207 is unreachable (pragma: no cover): the grid steps are kept "
        "below 2^52, so |total| never reaches 2^53 and `>=` / `>` cannot differ"
    ),
    "mechanisms-c5bf00d5": (
        "the same unreachable guard with 2^54: |total| stays below 2^53 either way"
    ),
    "mechanisms-275b53c5": (
        "a == 1.0 never holds (0 <= a < 1); at a == 0 the general formula gives the same pmf "
        "because 0**0 == 1 in numpy and Python"
    ),
    "mechanisms-0b7b0d31": (
        "scores are finite, so the terms with p == 0 that `p >= 0` adds contribute 0 * q = 0"
    ),
    "mechanisms-1d55e065": (
        "scores are finite, so the terms with p == 0 that `p >= 0` adds contribute 0 * q = 0"
    ),
    "mechanisms-6f91512a": (
        "keeping the p == 0 terms adds 0 * log terms that are finite (scores are finite): "
        "the sum is the same"
    ),
    "samplers-27238651": (
        "for n == 1 the rejection width is 0 bits and the draw is 0 (a shift by 64 is 0 in "
        "numpy and Python), the same as leaving it out"
    ),
    "samplers-642e2725": (
        "n == 1 then goes through the general path, whose draw for n == 1 is always 0"
    ),
    "samplers-54dcdff2": (
        "a rejection width of bits(n) instead of bits(n - 1) only rejects more often: the "
        "accepted draw is still exactly uniform on 0..n-1"
    ),
    "samplers-2d1b4a03": (
        "a width of bits(n + 1) only rejects more often: the accepted draw stays uniform"
    ),
    "samplers-2861ebdb": (
        "only the size of the OS entropy buffer changes (9 x 32 bytes = 36 uint64 words), "
        "every word is still read from os.urandom and used once"
    ),
    "samplers-4a5b32fb": (
        "only the size of the OS entropy buffer changes (33 words instead of 32)"
    ),
    "samplers-6dfe40ef": (
        "only the estimate of bits per draw that sizes the next chunk changes; the draws "
        "depend on the random stream alone (the docstring's contract), not on chunk sizes"
    ),
    "estimators-19fdd6fb": (
        "in exact arithmetic an equality at index j gives the same tau at j - 1 and j, so "
        "`>=` and `>` project to the same point; a 30,000-case random search found only "
        "1-ulp differences, neither side closer to the exact projection"
    ),
    "estimators-9f068e46": (
        "at p == 2 the James-Stein factor (p - 2) / ... is exactly 0 shrinkage, the same as "
        "returning x unchanged"
    ),
    "anatomy-d70141a9": (
        "`<` instead of `<=` against 1/l + 1e-12 differs only at exact float equality with the "
        "tolerance"
    ),
    "anatomy-9029b28e": (
        "the no-groups fallback is unreachable: an empty release is refused first"
    ),
    "anatomy-a846584c": (
        "the no-groups fallback is unreachable: an empty release is refused first"
    ),
    "anatomy-d170806c": (
        "a truth code equal to m already fails the (group, value) count check, with the same "
        "message"
    ),
    "anatomy-83a89acb": (
        "the compiled and the Python paths give the same result (the kernel is a port); only "
        "the threshold between them moves"
    ),
    "anatomy-8fb84042": (
        "an unused work buffer of the kernel changes size; the results are the same"
    ),
    "anatomy_core-b2dad339": (
        "the matching's penalty for a group that holds the value only has to exceed the number "
        "of residues (any allowed matching costs less); the mutant's still does"
    ),
    "anatomy_core-a38c1036": (
        "the matching's penalty only has to exceed the number of residues; the mutant's still does"
    ),
    "anatomy-c655d2c9": (
        "a truth code outside 0..m-1 cannot reach the check: a Table refuses codes outside its "
        "domain (test_a_release_refuses_a_truth_that_does_not_match_its_sensitive_table)"
    ),
    "anatomy_core-e76f41b8": (
        "group formation through the compiled kernel or the Python heap gives the same groups "
        "(the kernel is a port, test_the_compiled_sensitive_table_equals_the_python_one); only "
        "which sizes take which path changes"
    ),
    "anatomy_core-5e547a15": (
        "at exactly KERNEL_MIN records the Python path gives the same groups as the kernel"
    ),
    "alpha_beta-330db346": ("the inner guard's values are discarded by the outer np.where"),
    "alpha_beta-bb74295e": ("differs only when a uniform draw equals alpha + beta exactly"),
    "alpha_beta-9e56dd67": (
        "binomial(0, p) draws nothing and leaves the generator's state unchanged (checked)"
    ),
    "alpha_beta-1e5b6c86": (
        "binomial(n, 0) draws nothing and leaves the generator's state unchanged (checked)"
    ),
    "generalization_core-2e2d7b0b": (
        "classes are never empty, so k = 0 and k = 1 accept the same nodes"
    ),
    "generalization_core-c11bebf2": (
        "`overall` is read only by the t-closeness / delta checks, off in only_l"
    ),
    "generalization-563560df": ("bincount and unique give the same class counts here"),
    "generalization-663e5f8f": ("bincount and unique give the same class counts here"),
    "generalization-961a4259": ("bincount and unique give the same class counts here"),
    "generalization-1fa54a2b": ("int16 and int32 hold the same codes (the domain is below 2^15)"),
    "generalization-37a45054": ("key[rows] with every row is the same array"),
    "generalization-51aa8ad7": (
        "the radix path and argsort give the same stable order at the limit"
    ),
    "generalization-c4d38eba": (
        "the radix path and argsort give the same stable order at the limit"
    ),
    "generalization-6f099c9b": (
        "`g <= _RADIX / _RADIX` (1.0) instead of `_RADIX * _RADIX` before the two radix "
        "passes: ranks of more than 2^16 classes then take the general stable argsort, and a "
        "stable sort of the same keys has one result"
    ),
    "pram_core-30d310e6": (
        "`3**31` instead of `2**31` as the matrix size from which the codes take int64: "
        "matters only for a matrix of 2^31 or more rows (2^62 entries), which cannot be "
        "allocated (as 51a1c6c7's `2**32`)"
    ),
    "pram_core-b47738c1": (
        "the codes' range checked against the matrix's column count instead of its row "
        "count: two lines above, a matrix that is not square is refused"
    ),
    "pram_core-51a1c6c7": (
        "matters only for a matrix of 2^31 or more rows, where np.eye raises MemoryError either way"
    ),
    "pram_core-e0f99f7b": (
        "at exactly _SCAN_MAX the lookup table and the binary search give the same draws bit "
        "for bit"
    ),
    "pram_core-b981e647": (
        "at exactly _SCAN_MAX the lookup table and the binary search give the same draws bit "
        "for bit"
    ),
    "pram_core-756abf1a": (
        "a domain of 65 values drawn through the lookup table instead of the binary search: the"
        " same draws bit for bit"
    ),
    "samplers-061a736d": (
        "`used` only sizes the next chunk of words fetched (the rate estimate); the draws "
        "are a function of the bit stream alone, not of how it is chunked"
    ),
    "build-048a31af": (
        "the attribute section is built only for a release with a partition, whose privacy "
        "report always has a max_disclosure above 0 (a class's top share): the fallback is "
        "never taken"
    ),
    "samplers-b95d9d61": (
        "`used` only sizes the next chunk of words fetched (the rate estimate); the draws "
        "are a function of the bit stream alone, not of how it is chunked"
    ),
    "samplers-41849dda": (
        "`used` only sizes the next chunk of words fetched (the rate estimate); the draws "
        "are a function of the bit stream alone, not of how it is chunked"
    ),
    "samplers-0d0395e3": (
        "the ratio is taken only when done > 0 (else the first-chunk rate), so max(done, 0) "
        "== max(done, 1) there"
    ),
    "build-8bfe7ca4": (
        "_ORDER only ranks the levels (max by it): PASS < REVIEW < FAIL holds with FAIL = 3"
    ),
    "mechanisms-80d52a7a": (
        "the accountant is imported for annotations only; importing it at run time too "
        "changes nothing (no circle: privlab.dp.accountant imports no mechanism)"
    ),
    "mechanisms-ad3023ad": (
        "for an integer scale below 2^20 the ratio (2^20, 2^20 scale) equals (1, scale): the "
        "same noise law (and t stays far below the sampler's 2^48 cap)"
    ),
    "mechanisms-a6e3181c": (
        "the refusal needs t > 2^48, so scale > 2^28 and s = 1 there (s = 2^20 only below "
        "scale 2^20): multiplying or dividing by s is the same"
    ),
    "mechanisms-e14bf96a": (
        "the integer check of an empty or an integer array passes either way (np.all of an "
        "empty array is True; integers have no fraction)"
    ),
    "mechanisms-ef254c83": (
        "u < 1, so u * c[-1] < c[-1] and searchsorted never returns len(p) (unless u rounds "
        "to within 2^-53 of 1): the clamp, at len(p) - 1 or len(p) + 1, is not reached"
    ),
    "build-d2cbc722": (
        "at_risk_count is None only in a one-row table (everyone pooled, below min_count), "
        "whose precision is already None: hiding that row again changes nothing"
    ),
    "em-042c0f8e": (
        "EMRun is made in one place (run_em), which always passes seconds: the default is "
        "never used"
    ),
    "em-5048b611": (
        "a release has at least one tuple (an empty partition is refused when it is built), "
        "so max_group >= 1 and max(max_group, 0) == max(max_group, 1)"
    ),
    "em-84ee5453": (
        "a release has at least one tuple (an empty partition is refused when it is built), "
        "so max_group >= 1 and max(max_group, 0) == max(max_group, 1)"
    ),
    "generalization-fc3990d4": (
        "the threshold only chooses between bincount and pd.unique to count the distinct "
        "(column, quasi-identifier) pairs: both give the same count"
    ),
    "pram_core-6a5e18bc": (
        "np.put takes as many values as there are indices (hi - lo): a longer slice of the "
        "block (never a shorter one) scatters the same first hi - lo rows"
    ),
    "randomization-39e5d23e": (
        "validate_matrix refuses a matrix that is not square, so shape[1] equals shape[0]"
    ),
    "randomization-637f1939": (
        "the backward matrix R is invariant to the scale of pi (pi_l P[l, m] over its column "
        "sum): multiplying instead of dividing by the sum changes only the last bits"
    ),
    "pram_core-8ff7a3d5": (
        "the numpy path draws its uniforms block by block in row order from one generator: "
        "any block size gives the same draws (the size bounds memory only)"
    ),
    "pram_core-4c4578d7": (
        "below _KERNEL_MIN the numpy path runs, from it the compiled kernel: both give the same "
        "output and leave the generator in the same state (tested), so the threshold is speed "
        "only"
    ),
    "randomization-731142cb": (
        "a Block's matrix is square (refused otherwise when the block is made), so shape[1] "
        "equals shape[0]"
    ),
    "pram_core-271fcd64": (
        "with no rows but some columns (or the reverse) the compiled draw returns the same empty"
        " array and draws no random number"
    ),
    "definetti-f2577545": (
        "the dummy trace of the probe and latent runs is never indexed (no tracked positions), "
        "so a (0, 0) array serves as well as (1, 0)"
    ),
    "samplers-e3c0c7a0": (
        "one bit more in the rate estimate only sizes the next chunk of the stream (int(1.05 * "
        "rate * left) // 64 + 64 words); the draws read the same stream"
    ),
    "privacy-737085fc": (
        "the reported recursive c is at least 1 (the group with the fewest distinct values "
        "has c = r1 / r_dl >= 1), so a start of 1.0 instead of 0.0 never wins the maximum"
    ),
    "privacy-463f6a24": (
        "where the tail is 0 the outer np.where already gives inf (division warnings off): "
        "the inner `>= 0` changes nothing"
    ),
    "privacy-f581630f": (
        "with k == 1 there is a class of one, so `uniques` is always above 0 (as cb35ee6a)"
    ),
    "em-92652231": (
        "a group of one tuple then goes through linear_sum_assignment on its 1 x 1 cost "
        "matrix, which assigns the group's one value to it: the same as the shortcut"
    ),
    "estimators-d7d545d4": (
        "the fallback shift is used only where l1 == 0, i.e. x is all zeros, where the "
        "shift is multiplied by sign(0) == 0"
    ),
}

#: module -> environment variables set for its runs (the attacks' numba kernels run with the
#: JIT off: a mutant of a jitted function is then executed as Python, with no compile time).
ENV: dict[str, dict[str, str]] = {
    "src/privlab/attacks/_kernels.py": {"NUMBA_DISABLE_JIT": "1"},
}

DEFAULT_N = 60

_CMP = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}


@dataclass(frozen=True)
class Mutant:
    id: str
    module: str  # path relative to the root
    line: int
    kind: str
    original: str
    mutated: str
    start: int  # byte offsets of the replaced source
    end: int
    replacement: str  # the source written there

    def where(self) -> str:
        return f"{self.module.removeprefix('src/privlab/')}:{self.line}"

    def describe(self) -> str:
        return f"{self.where()} [{self.kind}] {self.original} -> {self.mutated}  ({self.id})"


def _short(text: str, width: int = 70) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 3] + "..."


class _Collector(ast.NodeVisitor):
    """Walk a module and record (node, kind, replacement source) for every mutant."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.found: list[tuple[ast.AST, str, str, str]] = []  # node, kind, text, qualname
        self.skip: set[int] = set()

    def _add(self, node: ast.AST, kind: str, text: str) -> None:
        self.found.append((node, kind, text, ".".join(self.stack) or "<module>"))

    # scopes, and subtrees that are never mutated
    def _scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            self.skip.add(id(body[0].value))  # docstring
        if not isinstance(node, ast.ClassDef):
            for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                self._skip_tree(a.annotation)
            for a in (node.args.vararg, node.args.kwarg):
                self._skip_tree(a.annotation if a else None)
            self._skip_tree(node.returns)
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scope

    def _skip_tree(self, node: ast.AST | None) -> None:
        if node is not None:
            self.skip.update(id(n) for n in ast.walk(node))

    def visit_Module(self, node: ast.Module) -> None:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            self.skip.add(id(body[0].value))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._skip_tree(node.annotation)
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self._skip_tree(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return
        self.generic_visit(node)

    # the mutation operators
    def visit_Compare(self, node: ast.Compare) -> None:
        if id(node) not in self.skip:
            for i, op in enumerate(node.ops):
                new = ast.Compare(
                    left=node.left,
                    ops=[*node.ops[:i], _CMP[type(op)](), *node.ops[i + 1 :]],
                    comparators=node.comparators,
                )
                self._add(node, "cmp", f"({ast.unparse(new)})")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if id(node) not in self.skip and type(node.op) in _ARITH:
            new = ast.BinOp(left=node.left, op=_ARITH[type(node.op)](), right=node.right)
            self._add(node, "arith", f"({ast.unparse(new)})")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if type(node.op) in _ARITH:
            new = ast.AugAssign(target=node.target, op=_ARITH[type(node.op)](), value=node.value)
            self._add(node, "arith", ast.unparse(new))
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        if id(node) not in self.skip:
            op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            self._add(node, "bool", f"({ast.unparse(ast.BoolOp(op=op, values=node.values))})")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        if id(node) in self.skip or isinstance(v, bool) or not isinstance(v, (int, float)):
            return
        new = 1 if v == 0 else 0 if v == 1 else v + 1
        new = type(v)(new)
        if new != v:
            self._add(node, "const", f"({new!r})")

    def visit_Return(self, node: ast.Return) -> None:
        v = node.value
        if v is not None and not (isinstance(v, ast.Constant) and v.value is None):
            self._add(v, "return", "None")
        self.generic_visit(node)

    def _negate(self, node: ast.If | ast.While | ast.IfExp) -> None:
        self._add(node.test, "negate", f"(not ({ast.unparse(node.test)}))")
        self.generic_visit(node)

    visit_If = visit_While = visit_IfExp = _negate


def _norm(src: str) -> str:
    try:
        return ast.unparse(ast.parse(f"({src})", mode="eval"))
    except SyntaxError:
        return ast.unparse(ast.parse(src))


def enumerate_mutants(module: str) -> list[Mutant]:
    """Every mutant of ``module`` (a path relative to the root), in source order."""
    raw = (ROOT / module).read_bytes()
    tree = ast.parse(raw)
    starts = [0]
    for line in raw.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    col = _Collector()
    col.visit(tree)
    stem = Path(module).stem
    seen: dict[str, int] = {}
    out = []
    for node, kind, text, qual in col.found:
        a = starts[node.lineno - 1] + node.col_offset
        b = starts[node.end_lineno - 1] + node.end_col_offset
        orig = raw[a:b].decode()
        if _norm(text) == _norm(orig):  # not a change (cannot happen with these operators)
            continue
        key = f"{qual}|{kind}|{' '.join(orig.split())}|{text}"
        k = seen.get(key, 0)
        seen[key] = k + 1
        digest = hashlib.sha1(f"{key}|{k}".encode()).hexdigest()[:8]
        out.append(
            Mutant(
                id=f"{stem}-{digest}",
                module=module,
                line=node.lineno,
                kind=kind,
                original=_short(orig),
                mutated=_short(text),
                start=a,
                end=b,
                replacement=text,
            )
        )
    for m in out:  # every mutant must still compile (else it would be a free kill)
        compile(apply(raw, m), module, "exec")
    return out


def apply(source: bytes, m: Mutant) -> bytes:
    """``source`` with mutant ``m`` applied."""
    return source[: m.start] + m.replacement.encode() + source[m.end :]


def _diff(m: Mutant) -> str:
    """The source line(s) a mutant changes, before and after."""
    raw = (ROOT / m.module).read_bytes()
    a = raw.rfind(b"\n", 0, m.start) + 1
    b = raw.find(b"\n", m.end)
    before = raw[a:b].decode()
    after = apply(raw, m)[a : b + len(m.replacement.encode()) - (m.end - m.start)].decode()
    return f"      - {before.strip()}\n      + {after.strip()}"


def sample(mutants: list[Mutant], n: int, seed: int) -> list[Mutant]:
    """A fixed sample of ``n`` mutants: the smallest hashes of ``seed:id`` (stable under
    edits elsewhere in the module), returned in source order."""
    ranked = sorted(mutants, key=lambda m: hashlib.sha1(f"{seed}:{m.id}".encode()).hexdigest())
    chosen = {m.id for m in ranked[:n]}
    return [m for m in mutants if m.id in chosen]


_PLUGIN = '''"""Loaded by tools/mutation.py into each pytest run (-p _privlab_mutation_plugin)."""
import os
from pathlib import Path


def pytest_configure(config):
    import privlab

    want = Path(os.environ["PRIVLAB_MUTATION_SRC"]).resolve()
    if want not in Path(privlab.__file__).resolve().parents:
        raise SystemExit(f"privlab imported from {privlab.__file__}, not from {want}")
    from hypothesis import settings

    try:
        parent = settings.get_profile("ci")
    except Exception:
        parent = settings(derandomize=True, deadline=None)
    settings.register_profile("mutation", parent=parent, database=None, derandomize=True)
    settings.load_profile("mutation")
'''


class Sandbox:
    """A temporary copy of ``src/`` with the pytest plugin; mutants are written into it."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="privlab-mutation-"))
        skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
        # a snapshot of the code *and* the tests: editing tests during a run changes nothing
        for name in ("src", "tests"):
            shutil.copytree(ROOT / name, self.dir / name, ignore=skip)
        shutil.copy2(ROOT / "pyproject.toml", self.dir / "pyproject.toml")  # pytest's config
        (self.dir / "_privlab_mutation_plugin.py").write_text(_PLUGIN)
        self.env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(self.dir / "src"), str(self.dir)]),
            PYTHONDONTWRITEBYTECODE="1",  # a mutant is always compiled from its source
            PRIVLAB_MUTATION_SRC=str(self.dir / "src"),
        )

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    @contextlib.contextmanager
    def mutated(self, m: Mutant) -> Iterator[None]:
        path = self.dir / m.module
        original = path.read_bytes()
        try:
            path.write_bytes(apply(original, m))
            yield
        finally:
            path.write_bytes(original)

    def run(
        self, tests: list[str], timeout: float | None, env: dict[str, str] | None = None
    ) -> tuple[str, float]:
        """``("passed" | "failed" | "timeout", seconds)`` of one pytest run (``env``: extra
        environment variables)."""
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
        cmd += ["-p", "_privlab_mutation_plugin", *tests]
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            cwd=self.dir,
            env={**self.env, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout", time.perf_counter() - t0
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        return ("passed" if rc == 0 else "failed"), time.perf_counter() - t0


@dataclass
class Result:
    mutant: Mutant
    outcome: str  # killed | survived | timeout | equivalent
    seconds: float


def run_module(
    box: Sandbox,
    module: str,
    mutants: list[Mutant],
    factor: float,
    log,
    out: list[Result],
    recheck: bool = False,
) -> list[Result]:
    """Run ``mutants`` of ``module``, appending each outcome to ``out`` as it comes.

    A mutant listed in ``EQUIVALENT`` is run like the others: it counts as ``equivalent``
    (excluded from the score) only while the tests still pass on it.  With ``recheck``
    (``--check-equivalent``) outcomes are reported raw."""
    tests, env = MODULES[module], ENV.get(module)
    status, base = box.run(tests, timeout=None, env=env)
    if status != "passed":
        raise SystemExit(f"{module}: its tests fail on the unmutated code ({' '.join(tests)})")
    timeout = factor * base + 30.0
    extra = "".join(f", {k}={v}" for k, v in (env or {}).items())
    log(
        f"== {module}: {len(mutants)} mutants, tests take {base:.1f}s, "
        f"timeout {timeout:.0f}s{extra}"
    )
    for i, m in enumerate(mutants, 1):
        with box.mutated(m):
            status, secs = box.run(tests, timeout, env=env)
        outcome = {"passed": "survived", "failed": "killed", "timeout": "timeout"}[status]
        if m.id in EQUIVALENT and not recheck:
            # A listed mutant of the sample is run too: one that still survives is excluded
            # as equivalent; one the tests now detect counts as detected and is flagged (its
            # EQUIVALENT entry is stale).
            if outcome == "survived":
                outcome = "equivalent"
            else:
                log(f"  listed in EQUIVALENT but {outcome}: remove {m.id} from EQUIVALENT")
        out.append(Result(m, outcome, secs))
        log(f"  [{i}/{len(mutants)}] {outcome:<10}  {m.describe()}  {secs:.1f}s")
    return out


def table(results: dict[str, list[Result]]) -> str:
    head = "| module | mutants | killed | timed out | survived | equivalent | score |"
    rows = [head, "|---|---:|---:|---:|---:|---:|---:|"]
    for module, res in results.items():
        c = {k: sum(r.outcome == k for r in res) for k in ("killed", "timeout", "survived")}
        eq = sum(r.outcome == "equivalent" for r in res)
        denom = len(res) - eq
        score = f"{(c['killed'] + c['timeout']) / denom:.0%}" if denom else "n/a"
        rows.append(
            f"| {module.removeprefix('src/privlab/')} | {len(res)} | {c['killed']} | "
            f"{c['timeout']} | {c['survived']} | {eq} | {score} |"
        )
    return "\n".join(rows)


def _stem(module: str) -> str:
    return Path(module).stem


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--module", action="append", help="module stem or path (repeatable)")
    ap.add_argument(
        "--modules", help="comma-separated module stems or paths (the same as several -m)"
    )
    ap.add_argument(
        "-n", "--per-module", dest="n", type=int, default=DEFAULT_N,
        help=f"mutants sampled per module (default {DEFAULT_N})",
    )  # fmt: skip
    ap.add_argument(
        "--seed", type=int, help="seed of the sample (default: a new random seed, printed)"
    )
    ap.add_argument("--id", action="append", help="run only these mutant ids (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the sampled mutants and stop")
    ap.add_argument("--diff", action="store_true", help="with --list: show each changed line")
    ap.add_argument(
        "--check-equivalent",
        action="store_true",
        help="run every mutant listed in EQUIVALENT (of the chosen modules) and report any "
        "that the tests now kill or that no longer exists; exit status 1 if any",
    )
    ap.add_argument("--timeout-factor", type=float, default=4.0, help="x unmutated time + 30s")
    ap.add_argument("--json", type=Path, help="also write the results to this JSON file")
    ap.add_argument("--table", type=Path, help="also write the markdown table to this file")
    args = ap.parse_args(argv)
    if args.modules:
        args.module = [*(args.module or []), *filter(None, args.modules.split(","))]
    seed = args.seed if args.seed is not None else secrets.randbelow(10**9)
    fresh = "a new random seed" if args.seed is None else "given"

    stems = [_stem(p) for p in MODULES]
    dup = {s for s in stems if stems.count(s) > 1}
    if dup:  # mutant ids and -m name modules by their stem
        raise SystemExit(f"MODULES holds two modules of the same stem: {sorted(dup)}")
    modules = list(MODULES)
    if args.module:
        want = set(args.module)
        modules = [p for p in modules if p in want or _stem(p) in want]
        if not modules:
            ap.error(f"no module matches {sorted(want)}; known: {stems}")
    plan: dict[str, list[Mutant]] = {}
    stale: list[str] = []  # EQUIVALENT entries that name no mutant any more
    for module in modules:
        every = enumerate_mutants(module)
        if args.check_equivalent:
            ids = {m.id for m in every}
            listed = [i for i in EQUIVALENT if i.rpartition("-")[0] == _stem(module)]
            stale += [i for i in listed if i not in ids]
            chosen = [m for m in every if m.id in EQUIVALENT]
        elif args.id:
            chosen = [m for m in every if m.id in args.id]
        else:
            chosen = sample(every, args.n, seed)
        plan[module] = chosen
        if args.list:
            print(f"== {module}: {len(every)} mutants, {len(chosen)} chosen")
            for m in chosen:
                eq = "  EQUIVALENT" if m.id in EQUIVALENT else ""
                print(f"  {m.describe()}{eq}")
                if args.diff:
                    print(_diff(m))
    if args.check_equivalent and not args.module:  # entries of no module in MODULES
        stale += [i for i in EQUIVALENT if i.rpartition("-")[0] not in stems]
    what = (
        "the EQUIVALENT list re-checked"
        if args.check_equivalent
        else "chosen ids"
        if args.id
        else f"seed {seed} ({fresh}; --seed {seed} draws this sample again)"
    )
    head = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    first = f"{what}; snapshot of src/ and tests/ at {head or 'an unknown commit'}"
    if args.list:
        print(first)
        for i in stale:
            print(f"  {i}: listed in EQUIVALENT, no such mutant any more")
        return 1 if stale else 0

    def log(msg: str) -> None:
        print(msg, flush=True)

    def _stop(signum, frame):  # `kill` stops a run like Ctrl-C: cleaned up, partial table
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)  # also when started in the background (SIGINT ignored)
    log(first)
    box = Sandbox()
    t0 = time.perf_counter()
    results: dict[str, list[Result]] = {}
    try:
        for module, chosen in plan.items():
            if chosen:
                results[module] = []
                run_module(
                    box,
                    module,
                    chosen,
                    args.timeout_factor,
                    log,
                    results[module],
                    recheck=args.check_equivalent,
                )
    except KeyboardInterrupt:
        print("\ninterrupted: the worktree was never modified; partial results follow")
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    finally:
        box.close()
    elapsed = time.perf_counter() - t0
    print()
    if args.check_equivalent:
        bad = [r for res in results.values() for r in res if r.outcome != "survived"]
        for r in bad:
            print(f"NOT EQUIVALENT ({r.outcome}): {r.mutant.describe()}")
        for i in stale:
            print(f"NO LONGER EXISTS: {i} (remove it from EQUIVALENT)")
        n = sum(len(res) for res in results.values())
        print(
            f"\n{n} equivalent mutants run, {n - len(bad)} still survive, {len(bad)} detected, "
            f"{len(stale)} no longer exist ({elapsed / 60:.1f} min)"
        )
        return 1 if bad or stale else 0
    setting = "chosen ids" if args.id else f"seed {seed}, {args.n} mutants per module"
    footer = f"({setting}, snapshot {head or 'unknown'}, {elapsed / 60:.1f} min)"
    print(table(results))
    print(f"\n{footer}")
    if args.table:
        args.table.write_text(f"{table(results)}\n\n{footer}\n")
    survivors = [r for res in results.values() for r in res if r.outcome == "survived"]
    if survivors:
        print("\nsurviving mutants:")
        for r in survivors:
            print(f"  {r.mutant.describe()}")
    eq = [r for res in results.values() for r in res if r.outcome == "equivalent"]
    if eq:
        print("\nequivalent (excluded):")
        for r in eq:
            print(f"  {r.mutant.describe()}: {EQUIVALENT[r.mutant.id]}")
    if args.json:
        payload = {
            "seed": None if args.id else seed,
            "snapshot": head,
            "results": {
                module: [dict(asdict(r.mutant), outcome=r.outcome, seconds=r.seconds) for r in res]
                for module, res in results.items()
            },
        }
        args.json.write_text(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
