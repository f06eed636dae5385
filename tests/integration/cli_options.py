#!/usr/bin/env python3
"""Conformance of every command's options, read from the commands themselves (--options-json):
--help names every option (none hidden); an unknown option exits 2 with one line; a count
option that takes 0 or a negative value says in its help what 0 means; every output option
given a folder where a file is meant (or a file where a folder is) fails before the work with
one line naming the path and writes nothing; --device 99 fails for every command that opens a
device. Usage: cli_options.py BUILD_DIR CLS_RUN_DIR STEREO_CKPT MODEL IMAGE SCRATCH_DIR."""
import json
import re
import os
import subprocess
import sys

build, cls_run, stereo, model, image, tmp = sys.argv[1:7]
cls = os.path.join(cls_run, "latest.ckpt")
# Options whose 0 is a value like any other, not a count of nothing.
NOT_COUNTS = {"seed", "rank", "first", "index"}
M = [os.path.join(build, "bin/manta")]
PROGRAMS = {
    "manta devices": M + ["devices"], "manta train": M + ["train"],
    "manta train (stereo)": M + ["train", "--space", "stereo-cpu"],
    "manta train-tiny": M + ["train-tiny"], "manta eval": M + ["eval"],
    "manta eval (stereo)": M + ["eval", "--ckpt", stereo],
    "manta eval (stereo model)": M + ["eval", "--model", os.path.join(tmp, "none.tflite"),
                                      "--ckpt", stereo],
    "manta export": M + ["export"],
    "manta export (stereo)": M + ["export", "--ckpt", stereo],
    "manta arch": M + ["arch"], "manta profile": M + ["profile"],
    "manta acc-dataset": M + ["acc-dataset"], "manta acc-fit": M + ["acc-fit"],
    "manta search": M + ["search"], "manta image": M + ["image"],
    "manta stereo-data": M + ["stereo-data"], "manta bench ops": M + ["bench", "ops"],
    "manta bench train": M + ["bench", "train"],
    "manta bench allreduce": M + ["bench", "allreduce"], "manta kernels": M + ["kernels"],
    "manta tune": M + ["tune"], "manta launch": M + ["launch"], "manta rendezvous": M + ["rendezvous"],
    "manta ckpt-diff": M + ["ckpt-diff"], "manta events": M + ["events"],
    "manta report": M + ["report"], "manta monitor": M + ["monitor"],
    "manta version": M + ["version"],
    "manta-infer": [os.path.join(build, "bin/manta-infer")],
    "manta-profile": [os.path.join(build, "bin/manta-profile")],
}
# What each command needs besides an output option to reach its checks: (arguments, outputs)
# with outputs {option: "file" | "dir"}.
OUTPUTS = {
    "manta train": (["--schedule", "smoke", "--stop-after", "1"], {"out": "dir", "tensorboard": "dir"}),
    "manta train (stereo)": (["--schedule", "smoke", "--stop-after", "1"],
                             {"out": "dir", "tensorboard": "dir"}),
    "manta eval": (["--model", model], {"predictions": "file"}),
    "manta eval (stereo)": ([], {"out": "dir"}),
    "manta export": (["--ckpt", cls, "--out", os.path.join(tmp, "m.tflite")],
                     {"out": "file", "c-array": "dir"}),
    "manta export (stereo)": (["--out", os.path.join(tmp, "s.tflite")],
                              {"out": "file", "c-array": "dir"}),
    "manta acc-dataset": (["--ckpt", cls], {"out": "file"}),
    "manta acc-fit": (["--samples", os.path.join(tmp, "none.jsonl")], {"out": "file"}),
    "manta search": (["--ckpt", cls, "--lut", "x", "--acc-model", "y", "--latency-ms", "1"],
                     {"out": "dir"}),
    "manta image": ([], {"out": "file"}),
    "manta stereo-data": (["--count", "1"], {"out": "dir"}),
    "manta profile": (["--device", "0"], {"csv": "file"}),
    "manta report": ([cls_run], {"out": "dir"}),
    "manta-profile": (["--validate", "2"], {"out": "file", "csv": "file", "layers-csv": "file"}),
    "manta-infer": ([model, image], {"dump-input": "file", "dump-output": "file", "out": "file",
                                    "color": "file"}),
}
# What each command that opens a device needs to get there.
DEVICE = {
    "manta train": ["--schedule", "smoke", "--stop-after", "1", "--out", os.path.join(tmp, "t")],
    "manta train (stereo)": ["--schedule", "smoke", "--stop-after", "1",
                             "--out", os.path.join(tmp, "ts")],
    "manta train-tiny": ["--steps", "1"], "manta eval": ["--ckpt", cls],
    "manta eval (stereo)": [], "manta export": ["--ckpt", cls, "--out", os.path.join(tmp, "d.tflite")],
    "manta export (stereo)": ["--out", os.path.join(tmp, "ds.tflite")],
    "manta profile": [], "manta acc-dataset": ["--ckpt", cls, "--out", os.path.join(tmp, "d.jsonl")],
    "manta bench ops": [], "manta bench train": ["--steps", "1"], "manta kernels": ["build"],
    "manta tune": [],
}
failures = []


def run(argv, timeout=120):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def fail(name, what):
    failures.append(f"{name}: {what}")


def lines(s):
    return [l for l in s.splitlines() if l.strip()]


# every command of manta --help is walked (bench by its sub-commands)
rc, text, err = run(M + ["--help"])
listed = [l.split()[0] for l in text.split("commands:", 1)[-1].splitlines()
          if l.startswith("  ") and l.split()]
covered = {argv[1] for argv in PROGRAMS.values() if len(argv) > 1 and argv[0] == M[0]}
for c in listed:
    if c not in covered:
        fail("manta", f"command '{c}' is not walked by this test")
if len(listed) < 20:
    fail("manta", f"--help lists {len(listed)} commands: {listed}")
folder = os.path.join(tmp, "a-folder")
afile = os.path.join(tmp, "a-file")
os.makedirs(folder, exist_ok=True)
open(afile, "w").close()
checked = {"help": 0, "counts": 0, "outputs": 0, "devices": 0}
for name, argv in PROGRAMS.items():
    rc, out, err = run(argv + ["--options-json"])
    if rc != 0:
        fail(name, f"--options-json: exit status {rc}: {err.strip()}")
        continue
    table = json.loads(out)["options"]
    rc, text, err = run(argv + ["--help"])
    if rc != 0:
        fail(name, f"--help: exit status {rc}")
    for o in table:
        checked["help"] += 1
        if not o["help"]:
            fail(name, f"--{o['name']} has no help line")
        elif f"--{o['name']}" not in text:
            fail(name, f"--help does not name --{o['name']}")
    rc, out, err = run(argv + ["--no-such-option-here"])
    if rc != 2 or len(lines(err)) != 1 or "--no-such-option-here" not in err:
        fail(name, f"an unknown option: exit status {rc}, stderr {err!r}")
    for o in table:
        if o["kind"] in ("int", "long") and o["lo"] <= 0 and o["name"] not in NOT_COUNTS:
            checked["counts"] += 1
            help_line = [l for l in text.splitlines() if f"--{o['name']} " in l]
            if not any(re.search(r"(?<![\d.])0(?![\d.])", l.split(f"--{o['name']} ", 1)[1])
                       for l in help_line):
                fail(name, f"--{o['name']} takes {o['lo']:g}; its help does not say what 0 means")
    args, outputs = OUTPUTS.get(name, ([], {}))
    names = {o["name"] for o in table}
    for opt, kind in outputs.items():
        if opt not in names:
            fail(name, f"the test's output option --{opt} is not in the table")
            continue
        checked["outputs"] += 1
        wrong = folder if kind == "file" else afile
        before = sorted(os.listdir(tmp)) + sorted(os.listdir(folder))
        rc, out, err = run(argv + args + [f"--{opt}", wrong])
        after = sorted(os.listdir(tmp)) + sorted(os.listdir(folder))
        if rc == 0 or len(lines(err)) != 1 or wrong not in err:
            fail(name, f"--{opt} {kind} given a {'folder' if kind == 'file' else 'file'}: "
                       f"exit status {rc}, stderr {err.strip()!r}")
        if before != after:
            fail(name, f"--{opt} refused, yet wrote {set(after) - set(before)}")
    if name in DEVICE:
        checked["devices"] += 1
        if "device" not in names:
            fail(name, "opens a device but has no --device")
            continue
        before = sorted(os.listdir(tmp))
        rc, out, err = run(argv + DEVICE[name] + ["--device", "99"])
        if rc == 0 or "99" not in err or len(lines(err)) != 1:
            fail(name, f"--device 99: exit status {rc}, stderr {err.strip()!r}")
        if sorted(os.listdir(tmp)) != before:
            fail(name, f"--device 99 refused, yet wrote {set(os.listdir(tmp)) - set(before)}")
for name in PROGRAMS:
    if name not in OUTPUTS:
        rc, out, err = run(PROGRAMS[name] + ["--options-json"])
        table = json.loads(out)["options"] if rc == 0 else []
        for o in table:
            if o["name"] in ("out", "csv", "predictions", "tensorboard", "c-array", "dump-input",
                             "layers-csv"):
                fail(name, f"--{o['name']} looks like an output the test does not check")
print(f"checked: {checked['help']} options named by --help, {checked['counts']} count options "
      f"documented, {checked['outputs']} output options, {checked['devices']} commands' --device")
for f in failures:
    print("FAIL: " + f)
sys.exit(1 if failures else 0)
