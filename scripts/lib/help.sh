# SPDX-License-Identifier: Apache-2.0
# Sourced by each script right after `set -euo pipefail`: `help_if_asked "$0" "$@"` prints the
# script's header comment (its usage, options and variables) and exits 0 when the first argument
# is -h or --help, so every script answers --help without doing anything else.
help_if_asked() {
  local script=$1
  shift
  case "${1:-}" in
    -h|--help)
      # The comment block after the shebang and SPDX lines, without its leading "# ".
      awk 'NR <= 2 && (/^#!/ || /SPDX-License-Identifier/) { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$script"
      exit 0 ;;
  esac
}
