#!/usr/bin/env python3
"""Training throughput of one OFA sub-network in PyTorch: the peer for
`manta bench train`. Builds exactly the layer structure of manta's search
space (runtime/space/ofa_space.h) from a spec file and an architecture, then times
SGD steps (Nesterov momentum, label-smoothed cross-entropy) on random data.

usage: torch_ofa_train.py --space models/ofa_cpu_default.json --arch max|min|FILE
                          [--res R] [--batch 64] [--steps 20] [--threads 2] [--json]
                          [--device cpu|cuda] [--tf32 on|off]

--device cuda runs on the first CUDA GPU, waiting for the GPU (torch.cuda.synchronize)
before and after each step so that each step is timed whole. --tf32 off turns TF32 off for
convolutions (cuDNN) and matrix products, a float32 against float32 comparison; on leaves
PyTorch's defaults (TF32 for convolutions on Ampere and later GPUs). The JSON line also
names the device, the torch version and the TF32 flags in force.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_divisible(v, divisor=8):
    nv = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if nv < 0.9 * v:
        nv += divisor
    return nv


def act(name):
    return nn.ReLU() if name == "relu" else nn.Hardswish()


class SE(nn.Module):
    def __init__(self, mid):
        super().__init__()
        se = make_divisible(mid / 4)
        self.reduce = nn.Conv2d(mid, se, 1, bias=True)
        self.expand = nn.Conv2d(se, mid, 1, bias=True)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        s = F.hardsigmoid(self.expand(F.relu(self.reduce(s))))
        return x * s


class MBConv(nn.Module):
    def __init__(self, cin, cout, mid, k, stride, a, se):
        super().__init__()
        layers = [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), act(a),
                  nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False),
                  nn.BatchNorm2d(mid), act(a)]
        if se:
            layers.append(SE(mid))
        layers += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class Net(nn.Module):
    def __init__(self, spec, arch):
        super().__init__()
        r = arch["r"][0] if isinstance(arch["r"], list) else arch["r"]
        st = spec["stem"]
        stride = 1 if r <= st["stride1_max_res"] else 2
        c = st["width"]
        self.stem = nn.Sequential(
            nn.Conv2d(spec["input_channels"], c, st["kernel"], stride, st["kernel"] // 2, bias=False),
            nn.BatchNorm2d(c), act(st["act"]))
        fw = spec["first_block"]["width"]
        self.first = nn.Sequential(
            nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False), nn.BatchNorm2d(c),
            act(spec["first_block"]["act"]), nn.Conv2d(c, fw, 1, bias=False), nn.BatchNorm2d(fw))
        self.first_residual = c == fw
        c = fw
        max_depth = max(spec["depths"])
        blocks = []
        for u, unit in enumerate(spec["units"]):
            for j in range(arch["d"][u]):
                slot = u * max_depth + j
                mid = make_divisible(c * arch["e"][slot])
                blocks.append(MBConv(c, unit["width"], mid, arch["ks"][slot],
                                     unit["stride"] if j == 0 else 1, unit["act"], unit["se"]))
                c = unit["width"]
        self.blocks = nn.Sequential(*blocks)
        h = spec["head"]
        self.head = nn.Sequential(nn.Conv2d(c, h["expand"], 1, bias=False),
                                  nn.BatchNorm2d(h["expand"]), nn.Hardswish())
        feat = h["expand"]
        self.mix = None
        if h["mix"] > 0:
            self.mix = nn.Sequential(nn.Linear(h["expand"], h["mix"], bias=False), nn.Hardswish())
            feat = h["mix"]
        self.classifier = nn.Linear(feat, spec["classes"])

    def forward(self, x):
        x = self.stem(x)
        y = self.first(x)
        x = x + y if self.first_residual else y
        x = self.head(self.blocks(x)).mean((2, 3))
        if self.mix is not None:
            x = self.mix(x)
        return self.classifier(x)


def uniform_arch(spec, which):
    pick = max if which == "max" else min
    slots = len(spec["units"]) * max(spec["depths"])
    res = spec["resolutions"]
    return {"ks": [pick(spec["kernel_sizes"])] * slots, "e": [pick(spec["expand_ratios"])] * slots,
            "d": [pick(spec["depths"])] * len(spec["units"]), "r": [pick(res)]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--space", default="models/ofa_cpu_default.json")
    ap.add_argument("--arch", default="max", help="max, min or a JSON file in OFA's encoding")
    ap.add_argument("--res", type=int, default=0, help="override the architecture's resolution")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20, help="timed steps (after 3 warm-up steps)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--tf32", choices=("on", "off"), default="on",
                    help="off: no TF32 in convolutions and matrix products (CUDA); on: PyTorch's defaults")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("torch_ofa_train.py: --device cuda: no CUDA device for torch %s" % torch.__version__)
    if a.tf32 == "off":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda" if cuda else "cpu")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    spec = json.load(open(a.space))
    arch = uniform_arch(spec, a.arch) if a.arch in ("max", "min") else json.load(open(a.arch))
    if a.res:
        arch["r"] = [a.res]
    r = arch["r"][0] if isinstance(arch["r"], list) else arch["r"]
    net = Net(spec, arch).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=3e-5)
    x = torch.randn(a.batch, spec["input_channels"], r, r).to(dev)
    y = torch.randint(0, spec["classes"], (a.batch,)).to(dev)
    times = []
    for i in range(a.steps + 3):
        sync()
        t = time.perf_counter()
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y, label_smoothing=0.1)
        loss.backward()
        opt.step()
        sync()
        if i >= 3:
            times.append(time.perf_counter() - t)
    med = statistics.median(times)
    name = torch.cuda.get_device_name(dev) if cuda else "cpu"
    out = {"peer": "pytorch", "version": torch.__version__, "threads": a.threads, "arch": a.arch,
           "r": r, "batch": a.batch, "steps": a.steps, "median_step_s": med,
           "images_per_s": a.batch / med, "device": a.device, "device_name": name,
           "tf32": a.tf32, "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
           "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32}
    if a.json:
        print(json.dumps(out))
    elif cuda:
        print(f"pytorch {torch.__version__} ({name}, TF32 {a.tf32}) {a.arch} r={r} batch {a.batch}: "
              f"{a.batch / med:.1f} images/s (median step {med * 1e3:.1f} ms)")
    else:
        print(f"pytorch {torch.__version__} ({a.threads} threads) {a.arch} r={r} batch {a.batch}: "
              f"{a.batch / med:.1f} images/s (median step {med * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
