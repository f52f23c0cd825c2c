#!/bin/sh
# Times singa against ONNX Runtime on the benchmark models, at 1 and 2
# threads, in one run, and prints a Markdown table.
#
#   bench/run.sh [BUILD_DIR] [--iters K] [--warmup W] [--repeat R] [--models "resnet18 ..."] [--set wide|extra]
#
# --set wide times the wide table instead of the six models (issue 33 item 5:
# the 20 models of `make_models.py --list wide`, families singa was not tuned
# for) at batch 1 only, and ends with each model's singa/ORT ratio at 1 and 2
# threads and the geometric mean at each thread count. --set extra does the
# same for a held-out set of other families (bench/extra_models.py).
#
# --repeat R measures every row R times, singa and ORT alternating, and
# reports for each runtime the median of its R medians (min: the least of
# the mins; prepare and peak RSS: the medians), and the spread of the
# latency ratio over the R back-to-back pairs. On a noisy machine (a VM
# whose 2-thread speed moves between levels from one minute to the next) a
# single pair of processes can land in different phases.
#
# BUILD_DIR defaults to ./build (the one holding tools/singa). Models are made
# on first use by bench/make_models.py into bench/.models. Needs /usr/bin/python3
# with torch/torchvision/onnx, node, and onnxruntime-node in bench/node_modules
# (ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix bench).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=build
iters=20
warmup=3
repeat=1
wide=0
extra=0
models="resnet18 mobilenet_v2 squeezenet1_1 tiny_yolov2 bert_encoder lstm_classifier"
while [ $# -gt 0 ]; do
  case "$1" in
    --iters) iters=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --set)
      case "$2" in
        wide) models=$(/usr/bin/python3 "$here/make_models.py" --list wide | tr '\n' ' '); wide=1 ;;
        extra) models=$(/usr/bin/python3 "$here/extra_models.py" --list | tr '\n' ' '); wide=1; extra=1 ;;
        *) echo "run.sh: unknown set '$2' (known: wide, extra)" >&2; exit 2 ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
singa="$build/tools/singa"
[ -x "$singa" ] || { echo "run.sh: $singa not found (give the build folder)" >&2; exit 2; }
[ -d "$here/node_modules/onnxruntime-node" ] || { echo "run.sh: onnxruntime-node missing in $here/node_modules" >&2; exit 2; }

# shellcheck disable=SC2086
if [ "$extra" = 1 ]; then
  /usr/bin/python3 "$here/extra_models.py" "$here/.models" --only $models
else
  /usr/bin/python3 "$here/make_models.py" "$here/.models" --only $models --singa "$singa"
fi

# The ONNX file of a model: NAME.onnx, or the file its NAME.json names (models
# that share one file at different symbolic dimensions).
model_file() {
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + ".json")).get("model", sys.argv[2] + ".onnx"))' \
    "$here/.models/$1" "$1"
}

results=$(mktemp)
peak_bin=$(mktemp)
trap 'rm -f "$results" "$peak_bin"' EXIT

# The FP32 peak, measured (bench/peak.c) at 1 and 2 threads before the models;
# empty when no C compiler is at hand (the table then uses the nominal clock).
peak1="" peak2=""
if cc -O2 -march=native -pthread "$here/peak.c" -o "$peak_bin" 2>/dev/null; then
  peak1=$("$peak_bin" 1) peak2=$("$peak_bin" 2)
fi

# One untimed start of each runtime first: the first process after a build
# reads the plugins and libraries from disk, which showed up as a prepare
# time three times too long in whichever row came first.
first=$(model_file "$(echo "$models" | cut -d' ' -f1)")
"$singa" bench "$here/.models/$first" --iters 1 --warmup 0 --json > /dev/null 2>&1 || true
node "$here/ort_bench.js" "$here/.models/$first" --iters 1 --warmup 0 > /dev/null 2>&1 || true

# One line per measurement: RUNTIME MODEL THREADS BATCH JSON. singa and ORT
# alternate so drifting machine load hits both alike.
measure() {  # model threads batch
  m=$1 t=$2 b=$3
  f=$(model_file "$m")
  dims=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["dims"]; print(" ".join("--dim %s=%d" % kv for kv in d.items()))' "$here/.models/$m.json")
  r=0
  while [ "$r" -lt "$repeat" ]; do
    # shellcheck disable=SC2086
    s=$("$singa" bench "$here/.models/$f" --threads "$t" --batch "$b" --iters "$iters" --warmup "$warmup" $dims --json)
    # shellcheck disable=SC2086
    o=$(node "$here/ort_bench.js" "$here/.models/$f" --threads "$t" --batch "$b" --iters "$iters" --warmup "$warmup" $dims)
    echo "singa $m $t $b $s" >> "$results"
    echo "ort $m $t $b $o" >> "$results"
    r=$((r + 1))
  done
  echo "  $m threads=$t batch=$b done" >&2
}

for m in $models; do
  # The model file into the page cache first: the first process to read a
  # 60 MiB model from disk (singa, which goes first) showed a prepare time
  # twice its usual one in some runs.
  cat "$here/.models/$(model_file "$m")" > /dev/null
  for t in 1 2; do measure "$m" "$t" 1; done
done
if [ "$wide" = 0 ]; then
  case " $models " in
    *" resnet18 "*) for b in 8 32; do measure resnet18 2 "$b"; done ;;
  esac
  # Every conv net at batch 8 (the issue's "% of FP32 peak at batch 8").
  for m in $models; do
    case "$m" in resnet18) ;; *) grep -q '"macs"' "$here/.models/$m.json" && measure "$m" 2 8 ;; esac
  done
fi

/usr/bin/python3 - "$results" "$here/.models" "$peak1" "$peak2" "$repeat" "$models" "$wide" <<'EOF'
import json, os, re, subprocess, sys

runs = {}
for line in open(sys.argv[1]):
    rt, m, t, b, js = line.split(" ", 4)
    runs.setdefault((m, int(t), int(b), rt), []).append(json.loads(js))

def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])

# One row per measurement: with --repeat, the medians of the repeats (min: the least).
rows = {}
for k, rs in runs.items():
    r = dict(rs[0])
    for f in ("median_ms", "prepare_ms", "peak_rss_mib"):
        r[f] = median([x[f] for x in rs])
    r["min_ms"] = min(x["min_ms"] for x in rs)
    rows[k] = r

def pair_range(m, t, b):
    """The least and greatest singa/ORT ratio over the repeats' back-to-back pairs
    (each pair ran within seconds, so a phase of the machine hits both alike)."""
    s, o = runs[(m, t, b, "singa")], runs[(m, t, b, "ort")]
    r = [x["median_ms"] / y["median_ms"] for x, y in zip(s, o)]
    return min(r), max(r)

def clock_ghz():
    """Nominal clock: lscpu's max MHz when the (virtual) CPU reports one, else /proc/cpuinfo's."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"CPU max MHz:\s*([\d.]+)", out)
        if m:
            return float(m.group(1)) / 1000, "lscpu 'CPU max MHz'"
    except OSError:
        pass
    for line in open("/proc/cpuinfo"):
        if line.startswith("cpu MHz"):
            return float(line.split(":")[1]) / 1000, "/proc/cpuinfo 'cpu MHz'"
    return None, "unknown"

ghz, source = clock_ghz()
peak = 2 * 2 * 16 * 2 * ghz if ghz else None  # cores x FMA units x fp32 lanes x 2 flops, GFLOP/s
measured = {1: float(sys.argv[3]), 2: float(sys.argv[4])} if len(sys.argv) > 4 and sys.argv[3] and sys.argv[4] else None

def peak_at(threads):
    """The measured peak at this thread count, else the nominal one (a core's share of it)."""
    if measured:
        return measured[min(threads, 2)]
    return peak * threads / 2 if peak else None
meta = {m: json.load(open(os.path.join(sys.argv[2], m + ".json"))) for m in {k[0] for k in rows}}

print("| model | threads | singa ms (median/min) | ORT ms (median/min) | singa/ORT latency | singa GFLOP/s | % of FP32 peak | ORT GFLOP/s | prepare singa/ORT | peak RSS singa/ORT (MiB) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (m, t, b, rt), s in sorted(rows.items()):
    if rt != "singa" or b != 1:
        continue
    o = rows[(m, t, b, "ort")]
    macs = meta[m].get("macs")
    gf = lambda r: 2 * macs * b / (r["median_ms"] * 1e6) if macs else None
    pct = "%.1f%%" % (100 * gf(s) / peak_at(t)) if macs and peak_at(t) else "-"
    fmt = lambda v: "%.1f" % v if v is not None else "-"
    lo, hi = pair_range(m, t, b)
    spread = " (%.2f-%.2f)" % (lo, hi) if int(sys.argv[5]) > 1 else ""
    print("| %s | %d | %.2f / %.2f | %.2f / %.2f | **%.2f**%s | %s | %s | %s | %.2f (%.0f / %.0f ms) | %.2f (%.0f / %.0f) |" % (
        m, t, s["median_ms"], s["min_ms"], o["median_ms"], o["min_ms"], s["median_ms"] / o["median_ms"], spread, fmt(gf(s)), pct,
        fmt(gf(o)), s["prepare_ms"] / o["prepare_ms"], s["prepare_ms"], o["prepare_ms"],
        s["peak_rss_mib"] / o["peak_rss_mib"], s["peak_rss_mib"], o["peak_rss_mib"]))
print()
if int(sys.argv[5]) > 1:
    print("Each row: the median of %s runs of each runtime, singa and ORT alternating (min: the least of their "
          "mins; prepare and peak RSS: medians); in brackets, the least and greatest ratio of one singa run to the "
          "ORT run right after it." % sys.argv[5])
    print()
if measured:
    print("FP32 peak, measured by bench/peak.c (16 chains of 16-float FMAs per thread): %.0f GFLOP/s at 1 thread, "
          "%.0f at 2; the %% column is against the peak at the row's thread count. (The nominal clock, %.2f GHz from %s, "
          "would give %.0f GFLOP/s for both cores: these cores boost past it.)" % (measured[1], measured[2], ghz or 0, source, peak or 0))
elif peak:
    print("FP32 peak: 2 cores x 2 FMA x 16 lanes x 2 flops x %.2f GHz = %.0f GFLOP/s (clock from %s); "
          "at 1 thread the %% is of one core's peak (half of it)." % (ghz, peak, source))
b8 = sorted(m for (m, t, b, rt) in rows if rt == "singa" and t == 2 and b == 8 and meta[m].get("macs"))
if b8:
    print()
    print("Conv nets at batch 8, 2 threads (GFLOP/s count the direct convolution's multiply-adds, so Winograd layers, "
          "which do fewer, can pass the peak):")
    print()
    print("| model | singa images/s | ORT images/s | singa/ORT throughput | singa GFLOP/s | % of FP32 peak | ORT GFLOP/s | ORT % of peak |")
    print("|---|---|---|---|---|---|---|---|")
    for m in b8:
        s, o = rows[(m, 2, 8, "singa")], rows[(m, 2, 8, "ort")]
        si, oi = 8000 / s["median_ms"], 8000 / o["median_ms"]
        gs, go = 2 * meta[m]["macs"] * si / 1e9, 2 * meta[m]["macs"] * oi / 1e9
        pk = peak_at(2)
        pct = lambda g: "%.1f%%" % (100 * g / pk) if pk else "-"
        print("| %s | %.1f | %.1f | %.2f | %.1f | %s | %.1f | %s |" % (m, si, oi, si / oi, gs, pct(gs), go, pct(go)))
tp = sorted((b, s) for (m, t, b, rt), s in rows.items() if m == "resnet18" and rt == "singa" and t == 2)
if tp:
    print()
    print("ResNet-18 throughput, 2 threads:")
    print()
    print("| batch | singa images/s | ORT images/s | singa/ORT throughput |")
    print("|---|---|---|---|")
    for b, s in tp:
        o = rows[("resnet18", 2, b, "ort")]
        si, oi = 1000 * b / s["median_ms"], 1000 * b / o["median_ms"]
        print("| %d | %.1f | %.1f | %.2f |" % (b, si, oi, si / oi))

# The wide table's summary: every model at batch 1, in the order asked for, and the geometric means.
order = sys.argv[6].split() if sys.argv[7] == "1" else []
if order:
    print()
    print("| model | singa/ORT 1 thread | singa/ORT 2 threads |")
    print("|---|---|---|")
logs = {1: [], 2: []}
for m in order:
    cells = []
    for t in (1, 2):
        s, o = rows.get((m, t, 1, "singa")), rows.get((m, t, 1, "ort"))
        r = s["median_ms"] / o["median_ms"] if s and o else None
        if r:
            logs[t].append(r)
        cells.append(("**%.2f**" if r > 1.0 else "%.2f") % r if r else "-")
    print("| %s | %s | %s |" % (m, cells[0], cells[1]))
import math
gm = lambda v: "%.2f" % math.exp(sum(map(math.log, v)) / len(v)) if v else "-"
if order:
    print("| geometric mean (%d models) | %s | %s |" % (len(logs[1]), gm(logs[1]), gm(logs[2])))
EOF
