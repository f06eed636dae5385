#!/bin/sh
# manta report: the plots of a real (stereo, smoke schedule) training run, and of a demo
# folder (tests/data/report/demo: a classification smoke run's metrics.jsonl, to whose
# progress records "ranks" arrays were added by hand and a partly written last line; the
# search's search.json and front.csv and the latency table's validation of a make demo run). Each PNG decodes (python3's zlib over its
# IDAT chunks, every CRC checked), has the expected size and more than one colour in its
# plot area; each SVG is well-formed XML with the expected title; index.html references
# every file; the sampled sub-networks' plot is drawn when the progress records carry
# "subnets" (added to the fixture's here), not without. Missing inputs are skipped with one
# line each; a bad folder, an empty one and a malformed search.json give one error line, exit
# status 1 and no files.
set -eu
M="${BUILD:-build}/bin/manta"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# check_png FILE WIDTH HEIGHT: decodes, the size, more than one colour in the middle.
check_png() {
    python3 - "$@" <<'EOF' || fail "$1: PNG check"
import struct, sys, zlib
path, W, H = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
    assert zlib.crc32(kind + body) & 0xffffffff == crc, "bad CRC in %s" % kind
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype = ihdr[:4]
assert (w, h) == (W, H), "size %dx%d, expected %dx%d" % (w, h, W, H)
assert depth == 8 and ctype in (2, 6), "depth %d colour type %d" % (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
assert len(raw) == h * (stride + 1), "IDAT holds %d bytes" % len(raw)
rows, prev = [], bytearray(stride)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        else: assert f == 0, "filter %d" % f
    rows.append(line)
    prev = line
colours = {bytes(rows[y][x * bpp:x * bpp + 3]) for y in range(h // 4, 3 * h // 4, 3)
           for x in range(w // 4, 3 * w // 4, 3)}
assert len(colours) > 1, "blank plot area"
print("%s: %dx%d, %d colours in the middle" % (path, w, h, len(colours)))
EOF
}

# check_svg FILE TITLE: well-formed XML whose <title> starts with TITLE.
check_svg() {
    python3 - "$@" <<'EOF' || fail "$1: SVG check"
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
root = doc.documentElement
assert root.tagName == "svg", root.tagName
t = root.getElementsByTagName("title")[0].firstChild.data
assert t.startswith(sys.argv[2]), "title %r" % t
assert len(root.getElementsByTagName("path")) > 10, "nothing drawn"
EOF
}

# check_html DIR STEM...: index.html references STEM.png and STEM.svg, and each exists.
check_html() {
    d=$1; shift
    [ -s "$d/index.html" ] || fail "no $d/index.html"
    for s in "$@"; do
        for e in png svg; do
            [ -s "$d/$s.$e" ] || fail "no $d/$s.$e"
            grep -q "src=\"$s.svg\"\|href=\"$s.$e\"" "$d/index.html" || fail "index.html lacks $s.$e"
        done
    done
    ls "$d" | grep -q '\.tmp\.' && fail "temporary files left in $d"
    return 0
}

# 1. a real training run (stereo: a second on a CPU), nothing else in the folder
"$M" train --space tests/data/stereo_tiny.json --schedule smoke --batch 2 --train-pairs 32 \
    --eval-pairs 4 --recal-pairs 4 --log-every 1 --out "$tmp/st" >"$tmp/st.log" 2>&1 ||
    { cat "$tmp/st.log"; fail "stereo training: exit status $?"; }
"$M" report "$tmp/st" >"$tmp/r1.out" 2>&1 || { cat "$tmp/r1.out"; fail "report of a training run"; }
cat "$tmp/r1.out"
check_png "$tmp/st/report/training.png" 1400 900
check_svg "$tmp/st/report/training.svg" "Training: stereo"
check_png "$tmp/st/report/throughput.png" 1800 560
check_html "$tmp/st/report" training throughput
grep -q 'End-point error' "$tmp/st/report/training.svg" || fail "stereo SVG: no EPE panel"
grep -q 'held-out EPE' "$tmp/st/report/index.html" || fail "index.html: no phase-end EPE"
for what in "search plot: no search.json" "latency validation plot: no validate.csv"; do
    [ "$(grep -c "^skipped $what" "$tmp/r1.out")" = 1 ] || fail "no skip line for $what"
done

# 2. a demo folder: training with ranks, search, latency validation
cp -r tests/data/report/demo "$tmp/demo"
"$M" report "$tmp/demo" --out "$tmp/demo_out" >"$tmp/r2.out" 2>"$tmp/r2.err" ||
    { cat "$tmp/r2.out" "$tmp/r2.err"; fail "report of a demo folder"; }
cat "$tmp/r2.out" "$tmp/r2.err"
grep -q 'skipped' "$tmp/r2.out" && fail "nothing should be skipped"
grep -q 'metrics.jsonl: 1 of 25 lines are not JSON objects.*line 25' "$tmp/r2.err" ||
    fail "no warning about the partly written line"
[ -e "$tmp/demo/report" ] && fail "--out was not used"
check_png "$tmp/demo_out/training.png" 1400 900
check_png "$tmp/demo_out/throughput.png" 1800 560
check_png "$tmp/demo_out/search.png" 1100 720
check_png "$tmp/demo_out/latency.png" 900 760
check_svg "$tmp/demo_out/training.svg" "Training: demo"
check_svg "$tmp/demo_out/throughput.svg" "Per-rank throughput (2 ranks)"
check_svg "$tmp/demo_out/search.svg" "Search: top-1 against predicted latency (cpu-default"
check_svg "$tmp/demo_out/latency.svg" "Latency table check"
check_html "$tmp/demo_out" training throughput search latency
[ -e "$tmp/demo_out/subnets.png" ] && fail "a sub-network plot without \"subnets\" records"
for fig in 'validation top-1, largest' '17.19%' '[7,3,3,3,7,3,5,7' '17.94%' '21.00%' '0.568 ms' \
    'Kendall tau' '16.16%'; do
    grep -qF "$fig" "$tmp/demo_out/index.html" || fail "index.html lacks $fig"
done

# 2b. the sampled sub-networks' sizes ("subnets" on progress records, added here to the
# fixture's; the partly written last line kept): their plot and the table's row
mkdir -p "$tmp/sub/supernet"
python3 - tests/data/report/demo/supernet/metrics.jsonl "$tmp/sub/supernet/metrics.jsonl" <<'EOF'
import json, sys
out = []
for line in open(sys.argv[1]).read().split("\n"):
    try:
        rec = json.loads(line)
    except ValueError:
        out.append(line)
        continue
    if "loss" in rec and "step" in rec:
        s = rec["step"]
        rec["subnets"] = {"n": 2, "macs_mean": 1e7 - 2e5 * s, "macs_min": 6e6 - 1e5 * s,
                          "macs_max": 1.7e7 - 2e5 * s, "params_mean": 1.2e6 - 2e4 * s,
                          "params_min": 8e5, "params_max": 1.8e6}
    out.append(json.dumps(rec))
open(sys.argv[2], "w").write("\n".join(out))
EOF
"$M" report "$tmp/sub" >"$tmp/r2b.out" 2>&1 || { cat "$tmp/r2b.out"; fail "report with subnets"; }
grep -q "wrote $tmp/sub/report/subnets.png and .svg: Sampled sub-networks" "$tmp/r2b.out" ||
    fail "no subnets plot: $(cat "$tmp/r2b.out")"
check_png "$tmp/sub/report/subnets.png" 1400 560
check_svg "$tmp/sub/report/subnets.svg" "Sampled sub-networks: MACs and parameters"
check_html "$tmp/sub/report" training subnets
grep -q 'sampled sub-networks, last record: MACs</th><td>[0-9.]* M ([0-9.]* to [0-9.]* M)' \
    "$tmp/sub/report/index.html" || fail "index.html: no sampled sub-networks' MACs"

# 3. inputs named by options (the latency table: validate.csv beside it), --json
mkdir "$tmp/lt"
cp tests/data/report/demo/validate.csv tests/data/report/demo/validate.json "$tmp/lt/"
echo '{"format":"manta-latency-table","version":2}' >"$tmp/lt/table.json"
"$M" report --search "$tmp/demo/search" --latency "$tmp/lt/table.json" --out "$tmp/o3" --json \
    >"$tmp/r3.json" || fail "report with --search --latency: exit status $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["files"]==["search.png","search.svg","latency.png","latency.svg","index.html"], d; assert len(d["skipped"])==1 and "--metrics" in d["skipped"][0], d' \
    "$tmp/r3.json" || fail "--json: $(cat "$tmp/r3.json")"
check_html "$tmp/o3" search latency
"$M" report --latency "$tmp/demo/validate.csv" --out "$tmp/o4" --quiet >"$tmp/r4.out" ||
    fail "report --latency CSV"
[ -s "$tmp/r4.out" ] && fail "--quiet printed: $(cat "$tmp/r4.out")"
check_html "$tmp/o4" latency

# 4. errors: one line, exit status 1, nothing written
expect_error() { # WHAT PATTERN COMMAND...
    what=$1 pat=$2; shift 2
    if "$@" >"$tmp/e.out" 2>"$tmp/e.err"; then fail "$what: exit status 0"; fi
    [ "$(wc -l <"$tmp/e.err")" = 1 ] || fail "$what: not one line: $(cat "$tmp/e.err")"
    grep -q "$pat" "$tmp/e.err" || fail "$what: $(cat "$tmp/e.err")"
}
expect_error "missing folder" "$tmp/none: No such file" "$M" report "$tmp/none"
expect_error "a file" "not a folder" "$M" report "$tmp/lt/table.json"
mkdir "$tmp/empty"
expect_error "empty folder" "$tmp/empty: nothing to report" "$M" report "$tmp/empty"
[ -e "$tmp/empty/report" ] && fail "empty folder: a report folder was made"
mkdir -p "$tmp/bad/search"
printf '{"format":"manta-search","best":' >"$tmp/bad/search/search.json"
cp tests/data/report/demo/validate.csv "$tmp/bad/"
expect_error "malformed search.json" "$tmp/bad/search/search.json: not JSON" "$M" report "$tmp/bad"
[ -e "$tmp/bad/report" ] && fail "malformed input: files were written"
printf 'predicted_ms,measured_ms\n1,2\nx,y\n' >"$tmp/bad.csv"
expect_error "malformed CSV" "bad.csv: line 3" "$M" report --latency "$tmp/bad.csv" --out "$tmp/o5"
expect_error "no inputs" "give RUN_DIR" "$M" report
"$M" report --help | grep -q 'usage: manta report' || fail "--help"
echo "report: ok"
