#!/usr/bin/env bash
# configs/sweeps/friction.yaml as a shell loop: one `dojo simulate` and one `dojo info --get`
# per friction coefficient, printing "friction final_x" lines.
#   configs/sweeps/friction.sh [OUTPUT_FOLDER]      (default: outputs/sweeps/friction-sh)
# `dojo sweep configs/sweeps/friction.yaml` does the same in parallel, resumably, with a manifest.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-outputs/sweeps/friction-sh}"
echo "friction final_x"
for mu in 0.1 0.2 0.3 0.4 0.5; do
  run="$out/friction-$mu.h5"
  # -o: the file this loop reads back (folders are created); --force: a re-run replaces it
  dojo simulate sliding_box --config "$here/../run/short.yaml" --set "contacts.*.friction=$mu" -o "$run" --force -q
  echo "$mu $(dojo info "$run" --get 'x[-1, box, 0]')"
done
