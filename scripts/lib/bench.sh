# SPDX-License-Identifier: Apache-2.0
# Sourced by the bench scripts after lib/help.sh, from the repository's root: the setup they share.

# bench_release PRODUCT…: builds each product in release, in .build-release (kept apart from the
# debug build), and sets $bin to the folder of the built programs.
bench_release() {
  local product
  for product in "$@"; do swift build -c release --scratch-path .build-release --product "$product" >/dev/null; done
  bin=$(swift build -c release --scratch-path .build-release --show-bin-path)
}

# bench_tool COMMAND PACKAGE: installs the Debian package that brings COMMAND when it is missing.
bench_tool() {
  command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }
}

# bench_pgqueuer: pgqueuer 1.6.0 (the queue Sluice's is compared with) and asyncpg from PyPI, in
# .build-release/pgqueuer-venv; sets $venv.
bench_pgqueuer() {
  venv=.build-release/pgqueuer-venv
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q "pgqueuer==1.6.0" asyncpg
  fi
}

# bench_median: the median of the numbers on standard input, separated by spaces or lines
# (decimals too); the mean of the middle two when their count is even.
bench_median() {
  tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'
}
