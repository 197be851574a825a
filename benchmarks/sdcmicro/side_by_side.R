# sdcMicro's side of benchmarks/bench_sdcmicro.py (issue 35): run by hand with sdcMicro
# installed (built here from github.com/sdcTools/sdcMicro).  Reads the CSVs that
# bench_sdcmicro.py writes, writes sdcMicro's outputs and timings beside them.
suppressMessages(library(sdcMicro))
args <- commandArgs(trailingOnly = TRUE)
dir <- args[1]
num <- c("age", "education.num", "capital.gain", "capital.loss", "hours.per.week")
x <- read.csv(file.path(dir, "numeric.csv"))
colnames(x) <- num
out <- list(version = as.character(packageVersion("sdcMicro")))
for (k in c(2, 3, 5, 10, 20, 50)) {
  t <- system.time(m <- microaggregation(obj = x, variables = num, aggr = k, method = "mdav"))
  write.csv(m$mx, file.path(dir, sprintf("sdc-mdav-k%d.csv", k)), row.names = FALSE)
  il <- dUtility(x, xm = m$mx, method = "IL1s")
  risk <- dRisk(x, xm = m$mx, k = 0.05)
  out[[sprintf("mdav_k%d", k)]] <- list(seconds = t[["elapsed"]], il1s = il, drisk = risk)
}
for (noise in c(10, 25, 50, 100, 200)) {
  set.seed(noise)
  t <- system.time(m <- addNoise(obj = x, variables = num, noise = noise, method = "additive"))
  # addNoise returns a matrix, and dUtility indexes columns as xm[[i]], which on a matrix is
  # one element: given as it comes, IL1s is nonsense (385,822 at 10% noise)
  xm <- as.data.frame(m$xm)
  il <- dUtility(x, xm = xm, method = "IL1s")
  risk <- dRisk(x, xm = xm, k = 0.05)
  out[[sprintf("noise_%d", noise)]] <- list(seconds = t[["elapsed"]], il1s = il, drisk = risk)
}
SUPP_ROWS <- 3000
cat_ <- read.csv(file.path(dir, "categorical.csv"), stringsAsFactors = TRUE)
keys <- colnames(cat_)
sub <- cat_[seq_len(SUPP_ROWS), ]  # sdcMicro's greedy: 17 s on 3,000 rows at k = 2
for (k in c(2, 3, 5)) {
  t <- system.time(s <- localSuppression(obj = sub, keyVars = keys, k = k))
  out[[sprintf("supp_k%d", k)]] <- list(seconds = t[["elapsed"]],
                                        cells = sum(is.na(s$xAnon[, keys])))
}
t <- system.time(r <- measure_risk(cat_, keyVars = keys))
out$risk <- list(seconds = t[["elapsed"]], global = r$global_risk,
                 expected = r$global_risk_ER)
writeLines(jsonlite::toJSON(out, auto_unbox = TRUE, digits = NA), file.path(dir, "sdc.json"))
