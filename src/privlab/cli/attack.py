"""Attack commands: ``attack definetti|em|flexible|random-worlds|control|maxent|membership``
and ``evaluate``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from privlab.cli._app import EncodingOpt, ForceOpt, SeedOpt, app, protects, say
from privlab.errors import PrivlabError

attack_app = typer.Typer(
    help="Attack a release as a learning adversary would; write posterior.csv.",
    no_args_is_help=True,
)
app.add_typer(attack_app, name="attack")
ReleaseArg = Annotated[
    Path,
    typer.Argument(help="A release directory whose rows form groups (anatomy, generalization)."),
]
PosteriorOut = Annotated[Path, typer.Option("--out", help="posterior.csv to write.")]


def _load(directory: Path):
    from privlab.attacks._layout import partition_of
    from privlab.release.base import load_release

    release = load_release(directory)
    partition_of(release)  # one clear line for a release with nothing to attack
    return release


def _check_outputs(out: Path, baseline: Path | None, *, force: bool) -> None:
    """Refuse, before any work, an existing ``--out`` or ``--baseline`` (unless ``force``) and
    a ``--baseline`` that names the ``--out`` file."""
    from privlab._io import check_output

    check_output(out, force=force)
    if baseline is not None:
        check_output(baseline, force=force)
        if baseline.resolve() == out.resolve():
            raise PrivlabError("--baseline and --out name the same file")


def _report(posterior, out: Path) -> None:
    d = posterior.diagnostics
    extra = ", ".join(
        f"{k} = {d[k]}"
        for k in d
        if d[k] is not None and not isinstance(d[k], list) and k != "convergence"
    )
    say(
        f"{posterior.method} attack on {posterior.n_rows} tuples -> {out}"
        + (f" ({extra})" if extra else "")
    )
    if d.get("convergence") and d.get("converged"):
        say(d["convergence"])  # an unconverged run says so as a warning line


@attack_app.command("definetti")
@protects("directory", "population")
def attack_definetti(
    directory: ReleaseArg,
    out: PosteriorOut,
    iterations: Annotated[
        str,
        typer.Option(
            "--iterations",
            help="Gibbs iterations per chain, or 'auto': sample until the chains converge "
            "(R-hat < 1.05, effective sample size >= 400) or the time budget runs out.",
        ),
    ] = "auto",
    time_budget: Annotated[
        float,
        typer.Option("--time-budget", help="Seconds the 'auto' mode may sample (default 300)."),
    ] = 300.0,
    sampler: Annotated[
        str,
        typer.Option(
            "--sampler",
            help="blocked (Kifer's Algorithm 1), collapsed (parameters integrated out) or "
            "alternate (both in turn): the same posterior, crossing modes differently.",
        ),
    ] = "blocked",
    anneal: Annotated[
        int,
        typer.Option(
            "--anneal",
            help="Annealed burn-in: during the first N iterations the likelihood is raised to "
            "a power rising from 0.01 to 1 (simulated annealing), so that each chain finds "
            "the posterior's main mode before sampling; part of the burn-in (0: none).",
        ),
    ] = 0,
    anneal_restarts: Annotated[
        int,
        typer.Option(
            "--anneal-restarts",
            help="Annealed burn-ins per chain, each from its own random start; the chains go "
            "on from the best of all the chains' burn-ins, one each, ranked by the "
            "log-likelihood of their ends, after up to 4 rounds of them while fewer than the "
            "chains lie in the best one's mode (needs --anneal).",
        ),
    ] = 1,
    population: Annotated[
        str | None,
        typer.Option(
            "--population",
            help="Threat model (a) on a generalized release: a CSV/Parquet file (or bundled "
            "dataset) with every person's exact quasi-identifiers, one row per person of the "
            "release; the posterior then has one row per person.",
        ),
    ] = None,
    hierarchies: Annotated[
        Path | None,
        typer.Option(
            "--hierarchies",
            help="The release's public hierarchies (ARX CSVs, DIR/<attribute>.csv) to read "
            "its generalized cells (a bundled dataset's population brings its defaults).",
        ),
    ] = None,
    burn_in: Annotated[
        int | None, typer.Option("--burn-in", help="Discarded iterations (default: half).")
    ] = None,
    chains: Annotated[int, typer.Option("--chains", help="Chains from random starts.")] = 4,
    prior: Annotated[float, typer.Option("--prior", help="Dirichlet prior (1 = uniform).")] = 1.0,
    seed: SeedOpt = None,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """The deFinetti attack (Kifer 2009): Gibbs sampling of Naive-Bayes models and permutations."""
    from privlab._memory import require_at_most
    from privlab.attacks.definetti import (
        CAP_REASONS,
        MAX_RESTARTS,
        DefinettiSettings,
        definetti_attack,
    )

    require_at_most("--anneal-restarts", anneal_restarts, MAX_RESTARTS, CAP_REASONS["restarts"])

    if iterations.strip().lower() == "auto":
        n_iter = None
        if burn_in is not None:
            raise PrivlabError("--burn-in needs a number of --iterations (not 'auto')")
    else:
        try:
            n_iter = int(iterations)
        except ValueError:
            raise PrivlabError(
                f"--iterations must be a whole number or 'auto', not {iterations!r}"
            ) from None
    if not time_budget > 0:
        raise PrivlabError(f"--time-budget must be a positive number of seconds, not {time_budget}")
    people, hier = None, None
    if population is not None:
        from privlab.attacks.population import bundled_hierarchies
        from privlab.data.datasets import load_input

        people = load_input(population, encoding=encoding)
        hier = hierarchies if hierarchies is not None else bundled_hierarchies(population)
    elif hierarchies is not None:
        raise PrivlabError("--hierarchies reads a generalized release for --population")
    settings = DefinettiSettings(
        iterations=n_iter, burn_in=burn_in, chains=chains, prior=prior, sampler=sampler,
        anneal=anneal, restarts=anneal_restarts, max_seconds=time_budget,
    )  # fmt: skip
    posterior = definetti_attack(_load(directory), settings, rng=seed, progress=True,
                                 population=people, hierarchies=hier)  # fmt: skip
    posterior.save(out, force=force)
    _report(posterior, out)


@attack_app.command("em")
@protects("directory")
def attack_em(
    directory: ReleaseArg,
    out: PosteriorOut,
    restarts: Annotated[int, typer.Option("--restarts", help="Random restarts.")] = 10,
    approximate: Annotated[
        bool, typer.Option("--approximate", help="Approximate E-step (ignores the groups).")
    ] = False,
    calibrate: Annotated[
        bool, typer.Option("--calibrate", help="Calibrated probabilities (Mothali 2011 Ch. 5.3).")
    ] = False,
    probabilities: Annotated[
        str,
        typer.Option(
            "--probabilities",
            help="'assignment' (marginals of Pr(pi) ~ prod gamma, Ch. 5.2) or 'gamma'.",
        ),
    ] = "assignment",
    init: Annotated[
        str,
        typer.Option(
            "--init",
            help="Starting point: 'random-worlds' (privlab's default) or 'dirichlet' (the "
            "thesis's Dirichlet-random parameters, Table 4.1).",
        ),
    ] = "random-worlds",
    sensitive: Annotated[
        str | None,
        typer.Option(
            "--sensitive",
            help="PRAM releases (required there): the randomized column to attack.",
        ),
    ] = None,
    qi: Annotated[
        str | None,
        typer.Option(
            "--qi",
            help="PRAM releases: comma-separated published columns the attacker uses "
            "(default: all the others).",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="PRAM releases: 'joint' (default: P(sensitive | QI combination) learned "
            "freely) or 'naive-bayes' (QIs independent given the sensitive value).",
        ),
    ] = None,
    seed: SeedOpt = None,
    force: ForceOpt = False,
) -> None:
    """The Naive-Bayes EM attack (Mothali, Ch. 4): MAP EM with an exact or approximate E-step.

    On a PRAM release: the attacker knows the published matrices, learns a Naive-Bayes model
    of the true values by EM deconvolution and gives each record the posterior of its true
    --sensitive value (privlab.attacks.pram; Kifer 2009 Sec. 7)."""
    from privlab.release.base import read_meta

    if read_meta(directory)["method"] == "pram":
        anatomy_only = {
            "--restarts": restarts != 10, "--approximate": approximate,
            "--calibrate": calibrate, "--probabilities": probabilities != "assignment",
            "--init": init != "random-worlds",
        }  # fmt: skip
        unused = [k for k, v in anatomy_only.items() if v]
        _attack_pram(directory, out, sensitive, qi, model, unused, force=force)
        return
    if sensitive is not None or qi is not None or model is not None:
        raise PrivlabError(
            f"--sensitive, --qi and --model apply to PRAM releases; {directory} holds a "
            f"{read_meta(directory)['method']!r} release"
        )
    from privlab.attacks.em import em_attack

    posterior = em_attack(
        _load(directory), restarts=restarts, approximate=approximate,
        calibrate=calibrate, probabilities=probabilities, init=init, rng=seed, progress=True,
    )  # fmt: skip
    posterior.save(out, force=force)
    _report(posterior, out)


def _attack_pram(
    directory: Path,
    out: Path,
    sensitive: str | None,
    qi: str | None,
    model: str | None,
    unused: list[str],
    *,
    force: bool,
) -> None:
    """`attack em` on a PRAM release: :func:`privlab.attacks.pram.pram_attack`."""
    from privlab._io import check_output
    from privlab.attacks.pram import pram_attack
    from privlab.cli._app import split
    from privlab.release.base import load_release, read_meta

    if unused:
        raise PrivlabError(
            f"{', '.join(unused)} apply to Anatomy and generalized releases, not to the PRAM "
            f"release {directory}"
        )
    if sensitive is None:
        raise PrivlabError(
            f"{directory} is a PRAM release: name the randomized column to attack with "
            "--sensitive COLUMN"
        )
    if "matrices" not in read_meta(directory):
        raise PrivlabError(
            f"{directory} is a PRAM release without its transition matrices (release.json "
            "has no 'matrices'): the attack needs them"
        )
    check_output(out, force=force)
    posterior = pram_attack(
        load_release(directory), sensitive=sensitive, qi=None if qi is None else split(qi),
        model=model or "joint",
    )  # fmt: skip
    posterior.save(out, force=force)
    d = posterior.diagnostics
    state = (
        f"converged in {d['iterations']} EM iterations"
        if d["converged"]
        else f"NOT converged after {d['iterations']} EM iterations"
    )
    say(
        f"PRAM attack ({d['model']}) on {sensitive!r} of {posterior.n_rows} records -> {out} "
        f"({state}); "
        f"max posterior {d['max_posterior']:.4g} against the gamma bound rho2* = "
        f"{d['rho2_star']:.4g} (gamma = {d['gamma']:.4g}, prior {d['rho1']:.4g}); "
        f"{d['above_rho2_star']:.1%} of the records above their value's bound"
    )


@attack_app.command("flexible")
@protects("directory", "targets")
def attack_flexible(
    directory: ReleaseArg,
    out: PosteriorOut,
    targets: Annotated[
        str,
        typer.Option(
            "--targets",
            help="The targets' exact quasi-identifiers: a CSV/Parquet file (or bundled "
            "dataset), one row per target, each a person of the release; the posterior has "
            "one row per target.",
        ),
    ],
    hierarchies: Annotated[
        Path | None,
        typer.Option(
            "--hierarchies",
            help="The release's public hierarchies (ARX CSVs, DIR/<attribute>.csv): how its "
            "cells read and which exact values they hide (bundled targets bring defaults).",
        ),
    ] = None,
    bandwidth: Annotated[
        str,
        typer.Option(
            "--bandwidth",
            help="Kernel width over ordered (numeric) attributes, in their units: 'auto' "
            "(Silverman's rule) or a number (0: plain Naive Bayes).",
        ),
    ] = "auto",
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="Also write the random-worlds posterior of the same targets (each published "
            "row covering the target equally likely) to this file.",
        ),
    ] = None,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """Threat model (b) on a generalized release: flexible Bayes (Kifer 2009 Sec. 5.2).

    The attacker knows each target's exact quasi-identifiers and the published table, not the
    others' exact values; it learns Naive Bayes with a kernel over ordered values from the
    published cells by EM, and weighs the rows whose cells cover the target."""
    import math

    from privlab.attacks.flexible import flexible_attack
    from privlab.attacks.population import bundled_hierarchies
    from privlab.attacks.posterior import save_posteriors
    from privlab.data.datasets import load_input

    if bandwidth.strip().lower() == "auto":
        width: float | str = "auto"
    else:
        try:
            width = float(bandwidth)
        except ValueError:
            width = math.nan
        if not (width >= 0 and math.isfinite(width)):
            raise PrivlabError(f"--bandwidth must be 'auto' or a number >= 0, not {bandwidth!r}")
    _check_outputs(out, baseline, force=force)
    release = _load(directory)
    people = load_input(targets, encoding=encoding)
    hier = hierarchies if hierarchies is not None else bundled_hierarchies(targets)
    post, base = flexible_attack(
        release, people, hierarchies=hier, bandwidth=width, return_baseline=True
    )
    save_posteriors((post, out), *([(base, baseline)] if baseline is not None else []), force=force)
    d = post.diagnostics
    state = "converged" if d["converged"] else "NOT converged"
    widths = ", ".join(f"{k} {v:g}" for k, v in d["bandwidths"].items()) or "none ordered"
    say(
        f"flexible-Bayes attack on {post.n_rows} targets -> {out} (EM {state} in "
        f"{d['iterations']} iterations; kernel widths: {widths}; "
        f"{d['targets_in_several_classes']} targets fit several classes)"
        + (f"; random worlds -> {baseline}" if baseline is not None else "")
    )
    say(f"threat model: {post.threat_model}")


@attack_app.command("random-worlds")
@protects("directory")
def attack_random_worlds(directory: ReleaseArg, out: PosteriorOut, force: ForceOpt = False) -> None:
    """The random-worlds baseline: each value's share of the tuple's group."""
    from privlab.attacks.random_worlds import random_worlds_attack

    posterior = random_worlds_attack(_load(directory))
    posterior.save(out, force=force)
    _report(posterior, out)


@attack_app.command("maxent")
@protects("directory", "targets")
def attack_maxent(
    directory: Annotated[Path, typer.Argument(help="An anonymized-marginals release directory.")],
    out: PosteriorOut,
    targets: Annotated[
        str,
        typer.Option(
            "--targets",
            help="The targets' exact quasi-identifiers: a CSV/Parquet file (or bundled "
            "dataset), one row per target (e.g. the original data); other columns are "
            "ignored. The posterior has one row per target.",
        ),
    ],
    qi: Annotated[
        str | None,
        typer.Option(
            "--qi",
            help="Comma-separated quasi-identifiers the attacker knows (default: all the "
            "release's); the others are summed out of the max-ent estimate.",
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="Also write the posterior of the base table alone (each value's share of "
            "the target's class: random worlds) to this file.",
        ),
    ] = None,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """The max-ent attack on anonymized marginals (Kifer & Gehrke 2006; Kifer 2009 Sec. 7).

    The attacker's model is the release's maximum-entropy estimate F2 (IPF over the base
    table and the marginals); each target gets F2(sensitive | its quasi-identifiers)."""
    from privlab.attacks.marginals import marginals_attack
    from privlab.attacks.posterior import save_posteriors
    from privlab.cli._app import split
    from privlab.data.datasets import load_input
    from privlab.release.base import load_release, read_meta

    method = read_meta(directory)["method"]
    if method != "marginals":
        raise PrivlabError(
            f"{directory} holds a {method!r} release; `attack maxent` attacks an "
            "anonymized-marginals release (privlab marginals)"
        )
    _check_outputs(out, baseline, force=force)
    release = load_release(directory)
    people = load_input(targets, encoding=encoding)
    post, base = marginals_attack(
        release, people, qi=None if qi is None else split(qi), return_baseline=True
    )
    save_posteriors((post, out), *([(base, baseline)] if baseline is not None else []), force=force)
    d, b = post.diagnostics, base.diagnostics
    state = "converged" if d["converged"] else "NOT converged"
    say(
        f"max-ent attack on {post.n_rows} targets -> {out} (IPF {state} in "
        f"{d['ipf_iterations']} cycles over {len(d['marginals'])} tables); mean top "
        f"posterior {d['mean_top_posterior']:.4g} (base table alone {b['mean_top_posterior']:.4g})"
        + (f"; random worlds -> {baseline}" if baseline is not None else "")
    )
    say(f"threat model: {post.threat_model}")


@attack_app.command("membership")
@protects("directory")
def attack_membership(
    directory: Annotated[Path, typer.Argument(help="An alpha-beta release directory.")],
    out: PosteriorOut,
    prior: Annotated[
        float | None,
        typer.Option(
            "--prior",
            help="The adversary's prior that a domain tuple is real, in [0, 1] (default: "
            "the release's d, else the estimate n~/m from the view).",
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """The exact posterior that each published tuple of an alpha-beta view is real, against
    gamma (Rastogi et al. 2007: a d-independent adversary)."""
    from privlab._io import check_output
    from privlab.attacks.alphabeta import alphabeta_attack
    from privlab.release.base import load_release, read_meta

    method = read_meta(directory)["method"]
    if method != "alphabeta":
        raise PrivlabError(
            f"{directory} holds a {method!r} release; `attack membership` attacks an "
            "alpha-beta release (privlab alphabeta)"
        )
    if prior is not None and not 0.0 <= prior <= 1.0:
        raise PrivlabError(f"--prior must lie in [0, 1], not {prior:g}")
    check_output(out, force=force)
    post = alphabeta_attack(load_release(directory), prior=prior)
    post.save(out, force=force)
    d = post.diagnostics
    if d["published"] == 0:
        say(f"membership attack: the view of {directory} is empty; nothing to attack -> {out}")
        return
    against = (
        f"gamma = {d['gamma']:.4g}: {'within' if d['within_gamma'] else 'ABOVE'}"
        if d["gamma"] is not None
        else "no gamma recorded in the release"
    )
    say(
        f"membership attack on {d['published']} published tuples -> {out}: "
        f"Pr[real | in view] = {d['max_posterior']:.4g} at prior {d['prior']:.4g} "
        f"({d['prior_source']}); {against}"
    )
    say(f"threat model: {post.threat_model}")


@attack_app.command("control")
@protects("directory", "public")
def attack_control(
    directory: ReleaseArg,
    out: PosteriorOut,
    public: Annotated[
        str,
        typer.Option(
            "--public",
            help="Public data the control learns from (CSV/Parquet path or bundled dataset, "
            "e.g. adult-test for a release of adult): other people than the release's, with "
            "its quasi-identifiers and sensitive attribute as columns; rows with missing "
            "values are dropped.",
        ),
    ],
    alpha: Annotated[
        float, typer.Option("--alpha", help="Laplace smoothing of the Naive-Bayes counts.")
    ] = 1.0,
    encoding: EncodingOpt = None,
    force: ForceOpt = False,
) -> None:
    """The control baseline: the same Naive-Bayes attacker, trained on public data only."""
    from privlab._io import check_output
    from privlab.attacks.control import control_attack
    from privlab.data.datasets import load_input

    check_output(out, force=force)
    release = _load(directory)
    table = load_input(public, drop_missing=True, encoding=encoding)
    posterior = control_attack(release, table, alpha=alpha, source=public)
    posterior.save(out, force=force)
    d = posterior.diagnostics
    ignored = {k: v for k, v in d["public_values_ignored"].items() if v}
    notes = [f"learned from {d['public_rows']} rows of {public}"]
    if d["public_rows_dropped"]:
        notes.append(f"{d['public_rows_dropped']} rows with other sensitive values dropped")
    if ignored:
        notes.append(f"values the release does not hold ignored: {ignored}")
    if d["sinkhorn_rows"]:
        notes.append(f"{d['sinkhorn_rows']} rows of large groups approximated (Sinkhorn)")
    say(f"control attack on {posterior.n_rows} tuples -> {out} ({'; '.join(notes)})")
    say(f"threat model: {d['threat_model']}")


@app.command()
@protects("posterior", "truth", "custody", "control")
def evaluate(
    posterior: Annotated[Path, typer.Argument(help="A posterior.csv written by an attack.")],
    truth: Annotated[
        Path | None, typer.Option("--truth", help="A truth.csv (row,<sensitive>).")
    ] = None,
    custody: Annotated[
        Path | None,
        typer.Option("--custody", help="The release's custody directory (reads its truth.csv)."),
    ] = None,
    sample: Annotated[
        int | None, typer.Option("--sample", help="Evaluate this many random tuples.")
    ] = None,
    seed: SeedOpt = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Reliability diagram PNG.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Metrics JSON to write.")] = None,
    control: Annotated[
        Path | None,
        typer.Option(
            "--control",
            help="The posterior of `privlab attack control` on the same release: adds its "
            "ACC and the residual risk (ACC - control) / (1 - control).",
        ),
    ] = None,
    threshold: Annotated[
        list[str] | None,
        typer.Option(
            "--threshold",
            help="At-risk threshold in (0, 1] (default 0.8), or VALUE=T for one sensitive "
            "value (Kifer 2009 Def. 2; repeatable).",
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Judge a posterior against the truth: ABS, SSQ, ACC, Brier = CAL + REF, people at risk,
    with 95% intervals, the random-worlds baseline and (--control) the residual risk."""
    from privlab._io import atomic_outputs, check_output, dumps
    from privlab.attacks.posterior import Posterior
    from privlab.cli._evaluation import matching_control, print_evaluation, thresholds
    from privlab.metrics.calibration import (
        calibration_events,
        plot_format,
        read_truth_for,
        reliability_diagram,
    )
    from privlab.metrics.calibration import evaluate as run_evaluation

    if (truth is None) == (custody is None):
        raise PrivlabError(
            "give the truth as --custody DIR (the release's custody) or --truth FILE"
        )
    # every output is checked before anything is computed or written
    if plot is not None:
        plot_format(plot)
        check_output(plot, force=force)
    if json_out is not None:
        check_output(json_out, force=force)
    post = Posterior.load(posterior)
    if custody is not None:
        from privlab.cli._evaluation import truth_from_custody

        codes = truth_from_custody(post, custody)
    else:
        codes = read_truth_for(post, truth, column=post.sensitive)
    cut = thresholds(threshold or [], post.values, posterior)
    ctrl = None if control is None else matching_control(control, post)
    # random worlds needs published groups: a posterior whose every row is its own group
    # (a PRAM attack's) has none, and the "baseline" would be the truth itself
    # (a flexible-Bayes posterior marks targets that fit several classes with group -1: its
    # random worlds is the --baseline file of `attack flexible`, not one group's shares)
    overlapping = bool((post.group_id < 0).any())
    grouped = len(set(post.group_id.tolist())) < post.n_rows and not overlapping
    ev = run_evaluation(
        post.probs, codes, sample=sample, rng=seed, threshold=cut, values=post.values,
        group_id=post.group_id if grouped else None,
        control=None if ctrl is None else ctrl.probs,
    )  # fmt: skip
    threat = {
        "attack": post.threat_model
        or "the attacker knows the published release and the quasi-identifiers of every "
        "person in it, and learns from the release itself",
    }
    if overlapping:
        threat["random_worlds"] = (
            "not computed: some targets fit several classes (local recoding); evaluate the "
            "--baseline posterior of `privlab attack flexible` instead"
        )
    elif grouped:
        threat["random_worlds"] = (
            "the attacker knows the same but learns nothing: each person's value is equally "
            "likely to be any of the values their group publishes (random worlds)"
        )
    if ctrl is not None:
        from privlab.attacks.control import threat_model

        threat["control"] = ctrl.threat_model or (
            f"{threat_model(None)} (the --public file of the `privlab attack control` run "
            f"that wrote {control})"
        )
    result = {"threat_model": threat, **ev.to_dict()}
    # the JSON and the plot appear together or not at all
    outputs = [(p, "file") for p in (json_out, plot) if p is not None]
    with atomic_outputs(*outputs, force=force) as temps:
        if json_out is not None:
            temps[0].write_text(dumps(result))
        if plot is not None:
            reliability_diagram(
                {posterior.name: calibration_events(post.probs, codes)}, temps[-1],
                force=True, format=plot_format(plot),
            )  # fmt: skip
    print_evaluation(result, str(posterior))
