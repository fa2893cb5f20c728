#!/usr/bin/env bash
# In-app recording against `impulse-lab record`, same settings, interleaved: RUNS pairs
# of a 3 s 1280x720 recording of pour_mixed at 30 fps and fast quality (render scale
# 1/2), each under its own Xvfb with Mesa's software Vulkan driver (the app's window
# 1280x800). Prints each run's "after warm-up" rate (frames 1.. rendered, stepped and
# encoded, over the wall time from frame 0 to the finished file) and the ratio of the
# medians. Usage: docs/tools/recording_pace.sh [BINARY] [RUNS]
set -euo pipefail
bin="${1:-target/release/impulse-lab}"
runs="${2:-3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export WGPU_BACKEND=vulkan
rate() { grep -o 'after warm-up [0-9.]* frames/s' | grep -o '[0-9.]*' | head -1; }
cli=() app=()
for k in $(seq "$runs"); do
    c=$(xvfb-run -a -s "-screen 0 1280x720x24" "$bin" record pour_mixed \
        --out "$tmp/cli.mp4" --duration 3 --size 1280x720 --fps 30 --quality fast 2>&1 | rate)
    a=$(xvfb-run -a -s "-screen 0 1280x800x24" "$bin" gui pour_mixed --size 1280x800 \
        --quality fast --record "$tmp/app.mp4" --record-size 1280x720 --record-fps 30 \
        --record-duration 3 --exit-after-frames 10 2>&1 | rate)
    rm -f "$tmp"/*.mp4
    echo "run $k: record $c frames/s, app $a frames/s"
    cli+=("$c") app+=("$a")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
mc=$(median "${cli[@]}") ma=$(median "${app[@]}")
echo "median: record $mc frames/s, app $ma frames/s, app/record $(awk -v a="$ma" -v c="$mc" 'BEGIN {printf "%.2f", a / c}')"
