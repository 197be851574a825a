# sdcMicro's own MDAV outputs, the golden files of tests/test_microaggregation.py
# (mdav(..., compat = "sdcmicro")).  Run by hand where sdcMicro is installed (5.8.1 here,
# built from github.com/sdcTools/sdcMicro):
#
#   Rscript benchmarks/sdcmicro/mdav_golden.R NUMERIC_CSV tests/data/sdcmicro
#
# NUMERIC_CSV: Adult's five numeric columns as benchmarks/bench_sdcmicro.py writes them
# (numeric.csv: privlab's load_dataset("adult"), 30,162 rows, columns age, education-num,
# capital-gain, capital-loss, hours-per-week).  Writes, gzipped:
#
# * mdav-adult3000.csv.gz: microaggregation(method = "mdav")$mx of the first 3,000 rows at
#   aggr = 3 (columns k3_1..k3_5) and 5 (k5_1..k5_5); the input is not stored (the test
#   reads it from privlab's bundled Adult);
# * mdav-ties.csv.gz: small random tables, case by case (columns case, k, then x1..x5 the
#   input and m1..m5 sdcMicro's output; unused columns empty): integers 0..3 in 2 to 5
#   columns (duplicates and equal distances everywhere), the edge sizes n < 2k and
#   2k <= n < 3k, and one continuous table.
#
# Values are written with 17 significant digits (R's write.csv keeps 15), so that the test
# can tell whether sdcMicro's values are bit for bit the ones privlab computes.
suppressMessages(library(sdcMicro))
args <- commandArgs(trailingOnly = TRUE)
src <- args[1]
dir <- args[2]
num <- c("age", "education.num", "capital.gain", "capital.loss", "hours.per.week")

g17 <- function(v) ifelse(is.na(v), "", sprintf("%.17g", v))
write_gz <- function(df, name) {
  con <- gzfile(file.path(dir, name), "w")
  writeLines(paste(colnames(df), collapse = ","), con)
  cells <- as.data.frame(lapply(df, function(v) if (is.numeric(v)) g17(v) else v))
  writeLines(do.call(paste, c(cells, sep = ",")), con)
  close(con)
}

x <- read.csv(src)
colnames(x) <- num
x <- x[seq_len(3000), ]
out <- list()
for (k in c(3, 5)) {
  m <- microaggregation(obj = x, variables = num, aggr = k, method = "mdav")$mx
  for (j in seq_along(num)) out[[sprintf("k%d_%d", k, j)]] <- m[[j]]
}
write_gz(as.data.frame(out), "mdav-adult3000.csv.gz")

cases <- list(  # n, p, k, continuous
  c(40, 2, 2, 0), c(101, 3, 3, 0), c(200, 4, 5, 0), c(57, 5, 4, 0), c(500, 3, 3, 0),
  c(300, 5, 2, 0), c(5, 2, 3, 0), c(7, 3, 3, 0), c(11, 2, 4, 0), c(300, 3, 3, 1)
)
rows <- list()
for (ci in seq_along(cases)) {
  set.seed(ci)
  n <- cases[[ci]][1]; p <- cases[[ci]][2]; k <- cases[[ci]][3]
  if (cases[[ci]][4] == 1) {
    t <- as.data.frame(matrix(round(rnorm(n * p) * 10, 3), n, p))
  } else {
    t <- as.data.frame(matrix(sample(0:3, n * p, replace = TRUE), n, p))
  }
  colnames(t) <- paste0("x", seq_len(p))
  m <- microaggregation(obj = t, variables = colnames(t), aggr = k, method = "mdav")$mx
  block <- data.frame(case = ci, k = k)
  block <- block[rep(1, n), ]
  for (j in 1:5) block[[paste0("x", j)]] <- if (j <= p) t[[j]] else NA
  for (j in 1:5) block[[paste0("m", j)]] <- if (j <= p) m[[j]] else NA
  rows[[ci]] <- block
}
write_gz(do.call(rbind, rows), "mdav-ties.csv.gz")
