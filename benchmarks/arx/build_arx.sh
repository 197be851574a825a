#!/bin/sh
# Build ARX's core (src/main) from a git snapshot with javac, for benchmarks/bench_arx.py.
#   benchmarks/arx/build_arx.sh <ARX git dir> <output dir>
# e.g. the `fetch` tool's mirror: /work/.mirror/arx-deidentifier+arx/repo.  Needs a JDK (17).
# The snapshot lacks three large jars (hadoop-core, pdfbox-app, poi-ooxml-schemas); the
# anonymization code needs none of them: two compile-time stand-ins (stubs/) take the place of
# the classes javac asks for, and the two PDF-certificate sources that need pdfbox itself
# (ARXCertificate, Watermark) are left out.  Nothing of ARX's algorithm is changed.
set -eu
GIT=$1
OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/src" "$OUT/classes"
git --git-dir "$GIT" ls-tree -r --name-only HEAD src/main lib | while read -r f; do
  mkdir -p "$OUT/src/$(dirname "$f")"
  git --git-dir "$GIT" show "HEAD:$f" > "$OUT/src/$f" 2>/dev/null || rm -f "$OUT/src/$f"
done
CP=$(find "$OUT/src/lib" -name '*.jar' | tr '\n' ':')
{ find "$OUT/src/src/main" -name '*.java' | grep -v -E '/(ARXCertificate|Watermark)\.java$'
  find "$HERE/stubs" -name '*.java'; } > "$OUT/sources.txt"
javac -nowarn -encoding UTF-8 -d "$OUT/classes" -cp "$CP" @"$OUT/sources.txt"
javac -d "$OUT/classes" -cp "$OUT/classes:$CP" "$HERE/ArxBench.java"
echo "$OUT/classes:$CP" > "$OUT/classpath.txt"
echo "ARX built: classpath in $OUT/classpath.txt"
