"""Every registered experiment: id -> (module, title, source).  Written by
``tools/experiments_catalogue.py`` from the modules' ``@register`` calls (a test checks
that the two agree); listing the experiments reads this, not the modules."""

CATALOGUE: dict[str, tuple[str, str, str]] = {
    "alphabeta-adult": (
        "alphabeta_adult",
        "alpha-beta on Adult: (rho, epsilon)-usefulness and the adversary's posterior",
        "Rastogi, Suciu & Hong (VLDB 2007), Thms 4.3 and 4.4 (seed 001); no paper table",
    ),
    "anatomy-table3.3": (
        "anatomy_table3_3",
        "The smoker example: Anatomy's release and a learning attacker's posterior",
        "Mothali 2011, Table 3.3 and Sec. 3.3 (Kifer 2009, Table 6)",
    ),
    "apriori-fig7.4": (
        "apriori_fig7",
        "Apriori from group-randomized Mushroom items (x30): the four measures against p",
        "Ma 2006, Sec. 7.1.4, Fig. 7.4",
    ),
    "apriori-fig7.5": (
        "apriori_fig7",
        "Apriori from group-randomized Adult items (x30): the four measures against p",
        "Ma 2006, Sec. 7.1.4, Fig. 7.5",
    ),
    "attacks-beyond-anatomy": (
        "attacks_beyond_anatomy",
        "Learning attacks on generalized and PRAM releases of Adult, beside their baselines",
        "Kifer 2009, Sec. 5.2 and Sec. 7; Ma 2006, Sec. 3.1.2",
    ),
    "bn-fig5.4": (
        "bn_fig5_4",
        "Cross-variable parameters vs the randomization level p, and p* vs N (Exp. 2)",
        "Ma 2006, Sec. 5.6.2, Figs 5.3, 5.4 and 5.5",
    ),
    "bn-fig5.7": (
        "bn_fig5_7",
        "Conditional KL of learned CPTs vs p (N = 10,000) and vs N (Exp. 3)",
        "Ma 2006, Sec. 5.6.3, Figs 5.6, 5.7 and 5.8",
    ),
    "bn-table5.2": (
        "bn_table5_2",
        "BN parameters from non-uniformly PRAM-randomized data (Exp. 1, Table 5.2)",
        "Ma 2006, Sec. 5.6.1, Fig. 5.2, Tables 5.1 and 5.2",
    ),
    "calibration-fig5.5": (
        "calibration_fig5_5",
        "Histogram of the EM attack's assignment probabilities on anatomized Adult",
        "Mothali 2011, Fig. 5.5 and Sec. 5.2",
    ),
    "calibration-table5.1": (
        "calibration_table5",
        "Brier score of the EM attack's probabilities, raw and calibrated",
        "Mothali 2011, Table 5.1 and Figs. 5.7-5.9",
    ),
    "cost-of-privacy": (
        "cost_of_privacy",
        "Privacy loss (A_know, A_acc) vs utility gain of generalization on Adult",
        "Brickell & Shmatikov 2008 (KDD)",
    ),
    "definetti-table7": (
        "definetti_table7",
        "deFinetti attack on anatomized Adult (ABS, SSQ, ACC), over anatomization draws",
        "Kifer 2009, Table 7 and Sec. 6",
    ),
    "dpforest-adult": (
        "dptree",
        "DP random forest vs DP tree vs diffprivlib on Adult (train / test split)",
        "Friedman & Schuster 2010, Conclusions (forests as future work)",
    ),
    "dpnb-adult": (
        "dpnb",
        "DP Naive Bayes on Adult: ML vs empirical Bayes vs James-Stein",
        "Mothali 2011, Tables 8.2-8.5, Figs 8.1-8.3",
    ),
    "dpnb-nursery": (
        "dpnb",
        "DP Naive Bayes on Nursery: ML vs empirical Bayes vs James-Stein",
        "Mothali 2011, Tables 8.6-8.9",
    ),
    "dptree-adult": (
        "dptree",
        "DP trees on Adult: accuracy vs epsilon, privlab vs diffprivlib",
        "Friedman & Schuster 2010, Fig. 3",
    ),
    "dptree-deeper": (
        "dptree",
        "DP tree, deeper trees: accuracy vs records per criterion",
        "Friedman & Schuster 2010, Fig. 2",
    ),
    "dptree-single-split": (
        "dptree",
        "DP tree, a single split: accuracy vs records per criterion",
        "Friedman & Schuster 2010, Fig. 1",
    ),
    "em-table4.3": (
        "em_table4",
        "Naive-Bayes EM attack (exact E-step) on anatomized Adult",
        "Mothali 2011, Table 4.3",
    ),
    "em-table4.4": (
        "em_table4",
        "Naive-Bayes EM attack (approximate E-step) on anatomized Adult",
        "Mothali 2011, Table 4.4",
    ),
    "estimators-risk": (
        "estimators_risk",
        "Risk vs dimension of ML, EB, JS and the exact Laplace-prior posterior mean",
        "Mothali 2011, Sec. 7.2, Figs 7.1-7.2",
    ),
    "generalization-examples": (
        "generalization_examples",
        "k-anonymous and l-diverse generalizations of the 12-row example",
        "Mothali 2011, Tables 1.2, 1.3, 2.4, 2.5",
    ),
    "generalization-peers": (
        "generalization_peers",
        "Optimal generalization vs ANJANA and anonypy on Adult (8 QIs)",
        "Mothali 2011, Ch. 2 (global vs local recoding); ANJANA, anonypy",
    ),
    "id3-fig7.8": (
        "id3_fig7",
        "ID3 from PRAM-randomized Adult (x30): accuracy against p",
        "Ma 2006, Sec. 7.2.3, Fig. 7.8",
    ),
    "id3-fig7.9": (
        "id3_fig7",
        "ID3 from PRAM-randomized Breast Cancer (x5): accuracy against p",
        "Ma 2006, Sec. 7.2.3, Fig. 7.9",
    ),
    "k2-fig5.10": (
        "k2_fig5_9",
        "K2 from PRAM data: BIC/MDL score with the penalty multiplier C* (Exp. 4)",
        "Ma 2006, Sec. 5.5, 5.6.4, Fig. 5.10",
    ),
    "k2-fig5.9": (
        "k2_fig5_9",
        "K2 from PRAM data: Bayesian score with the eta threshold (Exp. 4)",
        "Ma 2006, Sec. 5.5, 5.6.4, Fig. 5.9",
    ),
    "kifer-table1": (
        "kifer_table1",
        "Learning from a table: P(tuple 200 has lung cancer) = 100/101",
        "Kifer 2009, Table 1 and Sec. 3.1-3.2",
    ),
    "kifer-table6": (
        "kifer_table6",
        "deFinetti attack on the 12-tuple smoker example",
        "Kifer 2009, Table 6 and Sec. 5",
    ),
    "marginals-adult": (
        "marginals_adult",
        "Anonymized marginals on Adult: KL of a single table against table + marginals",
        "Kifer & Gehrke (SIGMOD 2006), Sec. 4-5 (seed 001); no numbers in the seed",
    ),
    "pocket-fig6.1": (
        "pocket_fig6",
        "Weighted vs plain Pocket on randomized Lenses (6,000 samples of Table 6.1)",
        "Ma 2006, Sec. 6.3, Table 6.1-6.2, Fig. 6.1",
    ),
    "pocket-fig6.2": (
        "pocket_fig6",
        "Weighted vs plain Pocket on randomized, MGAS-discretized Iris x 100",
        "Ma 2006, Sec. 6.3, Fig. 6.2",
    ),
    "pram-estimation": (
        "pram_estimation",
        "PRAM frequency estimation: moment vs EM (E2.1) and the KL trade-off (Fig. 3.4a)",
        "Ma 2006, Sec. 2.5 E2.1, Table 2.1, Fig. 2.2; Sec. 3.3, Fig. 3.4a",
    ),
    "pram-fig5.1": (
        "pram_fig5_1",
        "Distribution of a CPT entry learned from PRAM data: Hinkley vs Monte Carlo",
        "Ma 2006, Sec. 5.4.2-5.4.3, Fig. 5.1",
    ),
    "pram-gamma": (
        "pram_gamma",
        "PRAM gamma-amplification, breach bound and conditional entropy",
        "Ma 2006, Sec. 3.1, Table 5.1, Sec. 7.1.3, Fig. 3.1",
    ),
    "pram-mgas": (
        "pram_mgas",
        "MGAS (K = 1,500, g = 0.25) + PRAM + reconstruction of a two-triangle density",
        "Ma 2006, Sec. 2.3, 2.5 E2.2, Fig. 2.3; Sec. 3.3, Fig. 3.4b",
    ),
    "pram-odds-ratio": (
        "pram_odds_ratio",
        "Odds ratio r vs r^ from PRAM data (independence loss)",
        "Ma 2006, Sec. 3.2.2, Fig. 3.3",
    ),
    "sdc-tradeoff": (
        "sdc_tradeoff",
        "Record-linkage risk and information loss of microaggregation and noise on Adult",
        "Templ, Kowarik & Meindl 2015 (sdcMicro, JSS 67(4)), Sec. 6; Domingo-Ferrer & Torra 2001",
    ),
}
