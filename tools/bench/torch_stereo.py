#!/usr/bin/env python3
"""A PyTorch twin of one sub-network of a manta stereo space: an independent check of the
runtime's forward (correlation, transposed convolution, concatenation, bilinear upsampling,
elastic MBConv units) and of one training step's gradients (the multi-scale L1 loss).

The twin is built from the space's JSON and the architecture's JSON (as `manta arch ...
--json` writes them), with the layers of runtime/stereo/net.h, and reads its weights and
batch-norm statistics from a manta checkpoint ("params" and "bn_state" sections, the slab
layout of runtime/stereo/net.c). It runs in float64 on the CPU, so what it measures is the
runtime's float32 rounding (and any real difference).

usage: torch_stereo.py DIR [--ckpt FILE] [--fwd-tol 1e-4] [--grad-tol 1e-3] [--json]
       torch_stereo.py DIR --train-speed [--batch 8] [--steps 10] [--threads 2] [--json]

DIR is what tests/helpers/stereo_twin_dump wrote: space.json, arch.json, net.ckpt,
input.f32 (the raw input tensor: (2N, 3, H, W), left views then right views), gt<p>.f32,
and the runtime's results: eval<p>.f32 (forward with running statistics), train<p>.f32,
loss.f32 and grads.f32 (forward on batch statistics, the round's multi-scale loss, the
parameter gradient slab). --ckpt reads the weights from another checkpoint instead (e.g. a
`manta train` run's; the runtime's results must then come from the same one).

Checks: relative L2 of the finest eval prediction <= --fwd-tol (every scale is reported),
and of every parameter group's gradient <= --grad-tol (groups: stem, each unit's slots,
redirect, coarsest prediction, each decoder level, the batch norms of each part, the
decoder's biases). Exit 0 when every check passes, 1 otherwise.

--train-speed is the peer of `manta bench train --space stereo-... --twin-dir DIR`
(tools/bench/stereo_train_vs_torch.sh, make bench-stereo-train): the same sub-network as a
PyTorch model of its own (every weight it uses a leaf tensor, elastic kernels already
transformed), float32, random pairs, the same loss and SGD step; pairs/s and peak RSS.
"""
import argparse
import json
import os
import struct
import sys
import zlib

import numpy as np
import torch
import torch.nn.functional as F

LEAKY = 0.1
EPS = 1e-5
ALIGN = 16  # every tensor of a slab starts at a multiple of 16 floats (MLAYOUT_ALIGN, cl/slab.h)


def aligned(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


# ---- the checkpoint container (docs/checkpoint.md) -------------------------------------------

def read_checkpoint(path):
    """Every section of a manta checkpoint, verified (CRCs, sizes): name -> numpy array,
    bytes or parsed JSON."""
    data = open(path, "rb").read()
    if len(data) < 56 or data[:8] != b"MANTACKP":
        raise ValueError(f"{path}: not a manta checkpoint")
    version, flags, nsec, _, size, hcrc = struct.unpack_from("<IIIIQI", data, 8)
    if version != 1 or flags != 0:
        raise ValueError(f"{path}: format version {version}, flags {flags}; this reader reads 1, 0")
    if zlib.crc32(data[:32]) != hcrc:
        raise ValueError(f"{path}: header is corrupt (CRC mismatch)")
    if size != len(data):
        raise ValueError(f"{path}: {len(data)} bytes, the header says {size}")
    if data[size - 16:size - 8] != b"MANTAEND":
        raise ValueError(f"{path}: end marker is corrupt")
    if zlib.crc32(data[:size - 4]) != struct.unpack_from("<I", data, size - 4)[0]:
        raise ValueError(f"{path}: file CRC mismatch")
    out, pos = {}, 40
    elem = {1: 4, 2: 8, 3: 1, 4: 1}
    for _ in range(nsec):
        scrc, typ, count, nlen = struct.unpack_from("<IIQI", data, pos)
        namepad = (nlen + 7) // 8 * 8
        if zlib.crc32(data[pos + 4:pos + 24 + namepad]) != scrc:
            raise ValueError(f"{path}: section header at byte {pos} is corrupt")
        name = data[pos + 24:pos + 24 + nlen].decode("ascii")
        p = pos + 24 + namepad
        nbytes = count * elem[typ]
        end = p + (nbytes + 7) // 8 * 8
        if zlib.crc32(data[pos:end]) != struct.unpack_from("<I", data, end)[0]:
            raise ValueError(f"{path}: section '{name}' is corrupt (CRC mismatch)")
        raw = data[p:p + nbytes]
        if typ == 1:
            out[name] = np.frombuffer(raw, dtype="<f4").copy()
        elif typ == 2:
            out[name] = np.frombuffer(raw, dtype="<i8").copy()
        elif typ == 4:
            out[name] = json.loads(raw.decode("utf-8"))
        else:
            out[name] = raw
        pos = end + 8
    return out


# ---- the slab layout (runtime/stereo/net.c, runtime/elastic/mbconv.c) ------------------------

def make_divisible(v, divisor=8):
    nv = int(v + divisor / 2) // divisor * divisor
    nv = max(nv, divisor)
    if nv < 0.9 * v:
        nv += divisor
    return nv


class Layout:
    """Offsets of every tensor of the largest network in the parameter and state slabs."""

    def __init__(self, space, H, W):
        s = space
        self.s = s
        self.max_depth = max(s["depths"])
        self.ks = s["kernel_sizes"]
        self.e_max = max(s["expand_ratios"])
        cor = s["correlation"]
        self.dcorr = cor["max_disp"] // cor["stride"] + 1
        self.R = cor["redir_width"]
        self.after = cor["after_unit"]
        units = s["units"]
        L = sum(1 for u in units if u["stride"] == 2) + 1
        self.L = L
        dec = s["decoder"]["widths"]
        # geometry(): skip channels per scale, the correlation's input channels
        skip_c = [0] * (L + 1)
        skip_c[0] = 3
        c, k = s["stem"]["width"], 1
        skip_c[k] = c
        for u, unit in enumerate(units):
            if u == self.after:
                self.cc = c
                c = self.dcorr + self.R
                skip_c[k] = c
            c = unit["width"]
            k += unit["stride"] == 2
            skip_c[k] = c
        self.cl = c
        self.levels = []
        cin = c
        for i in range(L):
            self.levels.append({"cin": cin, "width": dec[i], "skip_c": skip_c[L - 1 - i]})
            cin = dec[i]
        # parameters: decayed first
        self.off = 0
        self.groups = {}  # group -> list of (start, end)
        sw, sk = s["stem"]["width"], s["stem"]["kernel"]
        self.stem_w = self._add(sw * 3 * sk * sk, "stem")
        self.slots = []
        c = sw
        for u, unit in enumerate(units):
            if u == self.after:
                c = self.dcorr + self.R
            for j in range(self.max_depth):
                mid = make_divisible(c * self.e_max)
                sl = {"in_c": c, "width": unit["width"], "mid_max": mid,
                      "se_max": make_divisible(mid / 4.0), "stride": unit["stride"] if j == 0 else 1,
                      "act": unit["act"], "se": unit["se"], "unit": u}
                g = f"u{u + 1}"
                K = self.ks[-1]
                sl["e_w"] = self._add(mid * c, g)
                sl["dw_w"] = self._add(mid * K * K, g)
                sl["kmat"] = [self._add(k ** 4, g) for k in self.ks[:-1]]
                if sl["se"]:
                    sl["se_r_w"] = self._add(sl["se_max"] * mid, g)
                    sl["se_e_w"] = self._add(mid * sl["se_max"], g)
                sl["p_w"] = self._add(sl["width"] * mid, g)
                self.slots.append(sl)
                c = unit["width"]
        self.redir_w = self._add(self.R * self.cc, "redir")
        self.pred0_w = self._add(self.cl * 9, "pred0")
        for i, lv in enumerate(self.levels):
            g = f"dec{i}"
            lv["cat_max"] = lv["skip_c"] + 1 + lv["width"]
            lv["up_w"] = self._add(lv["cin"] * lv["width"] * 16, g)
            lv["conv_w"] = self._add(lv["width"] * lv["cat_max"] * 9, g)
            lv["pred_w"] = self._add(lv["width"] * 9, g)
        self.n_decay = self.off
        # batch norms (with their state), then the decoder's biases
        self.soff = 0
        self.stem_bn = self._bn(sw, "bn.stem")
        for sl in self.slots:
            g = f"bn.u{sl['unit'] + 1}"
            sl["e_bn"] = self._bn(sl["mid_max"], g)
            sl["d_bn"] = self._bn(sl["mid_max"], g)
            sl["p_bn"] = self._bn(sl["width"], g)
            if sl["se"]:
                sl["se_r_b"] = self._add(sl["se_max"], g)
                sl["se_e_b"] = self._add(sl["mid_max"], g)
        self.redir_bn = self._bn(self.R, "bn.redir")
        self.pred0_b = self._add(1, "bias.dec")
        for lv in self.levels:
            lv["up_b"] = self._add(lv["width"], "bias.dec")
            lv["conv_b"] = self._add(lv["width"], "bias.dec")
            lv["pred_b"] = self._add(1, "bias.dec")
        self.n_params = self.off
        self.n_state = self.soff

    def _add(self, n, group):
        o = self.off
        self.off += aligned(n)
        self.groups.setdefault(group, []).append((o, self.off))
        return o

    def _bn(self, c, group):
        b = {"c": c, "gamma": self._add(c, group), "beta": self._add(c, group)}
        # running mean, variance, saved mean, saved 1/sqrt(var + eps)
        b["rmean"], b["rvar"] = self.soff, self.soff + aligned(c)
        self.soff += 4 * aligned(c)
        return b


# ---- the twin -------------------------------------------------------------------------------

def activation(name, x):
    if name == "relu":
        return F.relu(x)
    if name == "h-swish":
        return F.hardswish(x)
    if name == "leaky-relu":
        return F.leaky_relu(x, LEAKY)
    raise ValueError(f"activation {name}")


def correlation(fl, fr, max_disp, stride):
    """out[:, i, y, x] = mean_c fl[:, c, y, x] * fr[:, c, y, x - i*stride] (0 outside)."""
    outs = []
    W = fl.shape[3]
    for i in range(max_disp // stride + 1):
        d = i * stride
        if d >= W:
            outs.append(torch.zeros_like(fl[:, :1]))
            continue
        shifted = F.pad(fr[:, :, :, :W - d], (d, 0))
        outs.append((fl * shifted).mean(1, keepdim=True))
    return torch.cat(outs, 1)


class Twin:
    """The sub-network's forward on the flat parameter slab P (views of it, so that one
    backward gives the slab's gradient). With leaves (the training-speed mode) every weight
    the sub-network uses is instead its own leaf tensor, made once from P on the first
    forward (the elastic kernel already transformed, the active rows and columns already
    cut): the sub-network as PyTorch would train it on its own; batch norm then also keeps
    running statistics, as the runtime's training forward does."""

    def __init__(self, lay, arch, params, state, train, leaves=False):
        self.l, self.a, self.P, self.S, self.train = lay, arch, params, state, train
        self.leaves = [] if leaves else None
        self.next_leaf = 0
        self.running = {}

    def L(self, make):
        """make() (a weight: a view of P or a function of views), or its leaf."""
        if self.leaves is None:
            return make()
        if self.next_leaf == len(self.leaves):
            with torch.no_grad():
                self.leaves.append(make().detach().clone().contiguous().requires_grad_(True))
        t = self.leaves[self.next_leaf]
        self.next_leaf += 1
        return t

    def parameters(self):
        return list(self.leaves or [])

    def w(self, off, *shape):
        n = 1
        for d in shape:
            n *= d
        return self.P[off:off + n].view(*shape)

    def v(self, off, n):
        return self.L(lambda: self.P[off:off + n])

    def bn(self, b, x, c):
        g = self.v(b["gamma"], c)
        bt = self.v(b["beta"], c)
        if self.train:
            if self.leaves is None:
                return F.batch_norm(x, None, None, g, bt, True, 0.0, EPS)
            key = (b["rmean"], c)
            if key not in self.running:
                self.running[key] = (self.S[b["rmean"]:b["rmean"] + c].clone(),
                                     self.S[b["rvar"]:b["rvar"] + c].clone())
            rm, rv = self.running[key]
            return F.batch_norm(x, rm, rv, g, bt, True, 0.1, EPS)
        rm = self.S[b["rmean"]:b["rmean"] + c]
        rv = self.S[b["rvar"]:b["rvar"] + c]
        return F.batch_norm(x, rm, rv, g, bt, False, 0.0, EPS)

    def slot(self, sl, idx, x):
        a, l = self.a, self.l
        c, mid_max = sl["in_c"], sl["mid_max"]
        mid = make_divisible(c * a["e"][idx])
        k = a["ks"][idx]
        ks = l.ks
        y = F.conv2d(x, self.L(lambda: self.w(sl["e_w"], mid_max, c)[:mid].reshape(mid, c, 1, 1)))
        y = activation(sl["act"], self.bn(sl["e_bn"], y, mid))

        def kernel():
            K = ks[-1]
            wk = self.w(sl["dw_w"], mid_max, K, K)[:mid]
            ki = ks.index(k)
            for i in range(len(ks) - 2, ki - 1, -1):  # K -> ... -> k through the kernel matrices
                big, small = ks[i + 1], ks[i]
                o = big // 2 - small // 2
                centre = wk[:, o:o + small, o:o + small].reshape(mid, small * small)
                m = self.w(sl["kmat"][i], small * small, small * small)
                wk = (centre @ m.t()).reshape(mid, small, small)
            return wk.unsqueeze(1)

        y = F.conv2d(y, self.L(kernel), stride=sl["stride"], padding=k // 2, groups=mid)
        y = activation(sl["act"], self.bn(sl["d_bn"], y, mid))
        if sl["se"]:
            se, se_max = make_divisible(mid / 4.0), sl["se_max"]
            s = y.mean((2, 3))
            s = s @ self.L(lambda: self.w(sl["se_r_w"], se_max, mid_max)[:se, :mid].t()) + \
                self.v(sl["se_r_b"], se)
            s = F.relu(s)
            s = s @ self.L(lambda: self.w(sl["se_e_w"], mid_max, se_max)[:mid, :se].t()) + \
                self.v(sl["se_e_b"], mid)
            y = y * F.hardsigmoid(s)[:, :, None, None]
        wd = sl["width"]
        y = F.conv2d(y, self.L(lambda: self.w(sl["p_w"], wd, mid_max)[:, :mid].reshape(wd, mid, 1,
                                                                                        1)))
        y = self.bn(sl["p_bn"], y, wd)
        if sl["stride"] == 1 and c == wd:
            y = y + x
        return y

    def forward(self, x):
        """x (2N, 3, H, W) -> every prediction, coarsest first."""
        self.next_leaf = 0
        l, a, s = self.l, self.a, self.l.s
        N = x.shape[0] // 2
        L = l.L
        sw, sk = s["stem"]["width"], s["stem"]["kernel"]
        skip = [None] * (L + 1)
        skip[0] = x[:N]
        y = F.conv2d(x, self.L(lambda: self.w(l.stem_w, sw, 3, sk, sk)), stride=2, padding=sk // 2)
        y = activation(s["stem"]["act"], self.bn(l.stem_bn, y, sw))
        k = 1
        skip[k] = y[:N]
        for u, unit in enumerate(s["units"]):
            if u == l.after:
                cor = s["correlation"]
                corr = correlation(y[:N], y[N:], cor["max_disp"], cor["stride"])
                r = F.conv2d(y[:N], self.L(lambda: self.w(l.redir_w, l.R, l.cc).reshape(
                    l.R, l.cc, 1, 1)))
                r = F.leaky_relu(self.bn(l.redir_bn, r, l.R), LEAKY)
                y = torch.cat([corr, r], 1)
                skip[k] = y
            for j in range(a["d"][u]):
                idx = u * l.max_depth + j
                y = self.slot(l.slots[idx], idx, y)
            k += unit["stride"] == 2
            skip[k] = y[:N] if u < l.after else y
        preds = [F.conv2d(y, self.L(lambda: self.w(l.pred0_w, 1, l.cl, 3, 3)),
                          self.v(l.pred0_b, 1), padding=1)]
        for i, lv in enumerate(l.levels):
            aw = a["dw"][i]
            acin = a["dw"][i - 1] if i > 0 else lv["cin"]
            wd, sc = lv["width"], lv["skip_c"]
            up = F.conv_transpose2d(y, self.L(lambda: self.w(lv["up_w"], lv["cin"], wd, 4, 4)[
                :acin, :aw]), self.v(lv["up_b"], aw), stride=2, padding=1)
            up = F.leaky_relu(up, LEAKY)
            upp = F.interpolate(preds[-1], scale_factor=2, mode="bilinear", align_corners=False)
            cat = torch.cat([skip[L - 1 - i], upp, up], 1)
            cw = self.L(lambda: self.w(lv["conv_w"], wd, lv["cat_max"], 3, 3)[:aw, :sc + 1 + aw])
            y = F.leaky_relu(F.conv2d(cat, cw, self.v(lv["conv_b"], aw), padding=1), LEAKY)
            pw = self.L(lambda: self.w(lv["pred_w"], 1, wd, 3, 3)[:, :aw])
            preds.append(F.conv2d(y, pw, self.v(lv["pred_b"], 1), padding=1))
        return preds


def multiscale_loss(preds, gts, weights, max_disp):
    """The trainer's multi-scale L1 loss: weights normalised to sum 1, each scale the mean
    over its valid pixels (ground truth finite, > 0 and <= max_disp)."""
    total = sum(weights)
    loss, parts = 0.0, []
    for p, (pr, gt) in enumerate(zip(preds, gts)):
        w = weights[p] / total
        valid = torch.isfinite(gt) & (gt > 0) & (gt <= max_disp)
        cnt = int(valid.sum())
        if w <= 0 or cnt == 0:
            parts.append(0.0)
            continue
        lp = (pr - gt).abs()[valid].sum() / cnt
        parts.append(float(w * lp))
        loss = loss + w * lp
    return loss, parts


def multiscale_loss_fast(preds, gts, weights, max_disp):
    """multiscale_loss() without leaving the graph (no host synchronisation, no indexing by a
    mask): the training-speed mode's loss, the same value."""
    total = sum(weights)
    loss = 0.0
    for p, (pr, gt) in enumerate(zip(preds, gts)):
        w = weights[p] / total
        if w <= 0:
            continue
        valid = (torch.isfinite(gt) & (gt > 0) & (gt <= max_disp)).to(pr.dtype)
        loss = loss + w * ((pr - gt).abs() * valid).sum() / valid.sum().clamp(min=1)
    return loss


def train_speed(args):
    """Training pairs/s of the sub-network DIR/arch.json of the space DIR/space.json (what
    `manta bench train --space ... --twin-dir DIR` writes), as `manta bench train` measures
    it: random pairs in [0, 1) and ground truth uniform in (0, max_disp] at every scale, the
    multi-scale L1 loss of loss round 0, SGD with Nesterov momentum 0.9 and weight decay
    3e-5, float32; the median of --steps timed steps after 2 warm-up steps."""
    import resource
    import statistics
    import time
    torch.set_num_threads(args.threads)
    d = args.dir
    space = json.load(open(os.path.join(d, "space.json")))
    arch = json.load(open(os.path.join(d, "arch.json")))
    H, W = space["crop"]["height"], space["crop"]["width"]
    lay = Layout(space, H, W)
    g = torch.Generator().manual_seed(1)
    P = (torch.rand(lay.n_params, generator=g) * 0.2 - 0.1)
    S = torch.zeros(lay.n_state)
    bns = [lay.stem_bn, lay.redir_bn] + [sl[k] for sl in lay.slots
                                         for k in ("e_bn", "d_bn", "p_bn")]
    for b in bns:
        P[b["gamma"]:b["gamma"] + b["c"]] = 1.0
        P[b["beta"]:b["beta"] + b["c"]] = 0.0
        S[b["rvar"]:b["rvar"] + b["c"]] = 1.0
    twin = Twin(lay, arch, P, S, True, leaves=True)
    N, L = args.batch, lay.L
    x = torch.rand(2 * N, 3, H, W, generator=g)
    md = space["max_disp"]
    gts = [md * (1 - torch.rand(N, 1, H >> (L - p), W >> (L - p), generator=g))
           for p in range(L + 1)]
    weights = space["loss"]["rounds"][0]
    with torch.no_grad():
        twin.forward(x[:2])  # make the leaves
    opt = torch.optim.SGD(twin.parameters(), lr=0.01, momentum=0.9, nesterov=True,
                          weight_decay=3e-5)
    times = []
    for i in range(args.steps + 2):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = multiscale_loss_fast(twin.forward(x), gts, weights, md)
        loss.backward()
        opt.step()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    res = {"runtime": "torch", "torch": torch.__version__, "threads": torch.get_num_threads(),
           "space": space["name"], "arch": arch, "h": H, "w": W, "batch": N,
           "steps": args.steps, "median_step_s": med, "pairs_per_s": N / med,
           "loss": float(loss),
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    if args.json:
        print(json.dumps(res))
    else:
        print(f"torch {torch.__version__} ({res['threads']} threads): {space['name']} "
              f"{W}x{H} batch {N}: {res['pairs_per_s']:.2f} pairs/s (median step "
              f"{med * 1e3:.1f} ms), peak RSS {res['peak_rss_mib']:.0f} MiB")
    return 0


def rel_l2(a, b):
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    nb = np.linalg.norm(b)
    na = np.linalg.norm(a - b)
    return na / nb if nb > 0 else (0.0 if na == 0 else float("inf"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--ckpt", help="weights and batch-norm statistics (default DIR/net.ckpt)")
    ap.add_argument("--fwd-tol", type=float, default=1e-4)
    ap.add_argument("--grad-tol", type=float, default=1e-3)
    ap.add_argument("--no-grad", action="store_true", help="check the forward only")
    ap.add_argument("--json", action="store_true", help="one JSON line of the results")
    ap.add_argument("--float32", action="store_true",
                    help="run the twin in float32 (default float64): how far float32 rounding "
                         "alone moves the results")
    ap.add_argument("--perturb", type=float, default=0.0, metavar="EPS",
                    help="also take the twin's gradients at the parameters times (1 + EPS n), n "
                         "standard normal, seeded: how far a rounding-sized change moves the "
                         "gradients themselves (a gradient with ReLU inputs near zero moves); "
                         "a group passes when within the larger of --grad-tol and twice that")
    ap.add_argument("--train-speed", action="store_true",
                    help="time training steps instead (float32): DIR holds space.json and "
                         "arch.json (manta bench train --space ... --twin-dir DIR)")
    ap.add_argument("--batch", type=int, default=8, help="--train-speed: pairs per step")
    ap.add_argument("--steps", type=int, default=10, help="--train-speed: timed steps")
    ap.add_argument("--threads", type=int, default=2, help="--train-speed: torch threads")
    args = ap.parse_args()
    if args.train_speed:
        return train_speed(args)
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    d = args.dir
    dt = np.float32 if args.float32 else np.float64
    space = json.load(open(os.path.join(d, "space.json")))
    arch = json.load(open(os.path.join(d, "arch.json")))
    ck = read_checkpoint(os.path.join(d, "net.ckpt"))
    meta = ck["meta"]
    if args.ckpt:
        ck = read_checkpoint(args.ckpt)
    N, H, W, rnd = meta["pairs"], meta["height"], meta["width"], meta["round"]
    lay = Layout(space, H, W)
    if (lay.n_params, lay.n_decay, lay.n_state) != (meta["n_params"], meta["n_decay"],
                                                    meta["n_state"]):
        sys.exit(f"torch_stereo: layout {lay.n_params}/{lay.n_decay}/{lay.n_state} parameters/"
                 f"decayed/state, the runtime's {meta['n_params']}/{meta['n_decay']}/"
                 f"{meta['n_state']}")
    if ck["params"].size != lay.n_params or ck["bn_state"].size != lay.n_state:
        sys.exit("torch_stereo: the checkpoint's slabs do not fit the space")

    def f32(name, shape=None):
        v = np.fromfile(os.path.join(d, name), dtype="<f4")
        return v if shape is None else v.reshape(shape)

    L = lay.L
    pshape = [(N, 1, H >> (L - p), W >> (L - p)) for p in range(L + 1)]
    x = torch.from_numpy(f32("input.f32", (2 * N, 3, H, W)).astype(dt))
    state = torch.from_numpy(ck["bn_state"].astype(dt))
    res = {"space": space["name"], "arch": arch, "pairs": N, "height": H, "width": W,
           "round": rnd, "params": lay.n_params}
    ok = True
    with torch.no_grad():
        P = torch.from_numpy(ck["params"].astype(dt))
        preds = Twin(lay, arch, P, state, False).forward(x)
    fwd = [rel_l2(f32(f"eval{p}.f32"), preds[p].numpy()) for p in range(L + 1)]
    res["forward_rel_l2"] = fwd
    ok &= fwd[-1] <= args.fwd_tol
    if not args.no_grad:
        P = torch.from_numpy(ck["params"].astype(dt)).requires_grad_(True)
        preds = Twin(lay, arch, P, state, True).forward(x)
        gts = [torch.from_numpy(f32(f"gt{p}.f32", pshape[p]).astype(dt))
               for p in range(L + 1)]
        loss, parts = multiscale_loss(preds, gts, space["loss"]["rounds"][rnd],
                                      space["max_disp"])
        loss.backward()
        g = P.grad.numpy()
        mg = f32("grads.f32")
        res["train_rel_l2"] = [rel_l2(f32(f"train{p}.f32"), preds[p].detach().numpy())
                               for p in range(L + 1)]
        mloss = f32("loss.f32").reshape(L + 1, 3)
        res["loss"] = {"twin": float(loss), "runtime": float(mloss[:, 0].sum())}
        res["loss_rel"] = abs(res["loss"]["twin"] - res["loss"]["runtime"]) / max(
            abs(res["loss"]["twin"]), 1e-30)
        gp = None
        if args.perturb > 0:  # the same twin at parameters a rounding-sized step away
            rng = np.random.default_rng(1)
            p1 = ck["params"].astype(dt) * (1 + args.perturb * rng.standard_normal(lay.n_params))
            P1 = torch.from_numpy(p1.astype(dt)).requires_grad_(True)
            pr1 = Twin(lay, arch, P1, state, True).forward(x)
            l1, _ = multiscale_loss(pr1, gts, space["loss"]["rounds"][rnd], space["max_disp"])
            l1.backward()
            gp = P1.grad.numpy()
        groups, sens = {}, {}
        for name, ranges in lay.groups.items():
            idx = np.concatenate([np.arange(a, b) for a, b in ranges])
            if not np.any(g[idx]) and not np.any(mg[idx]):
                continue  # a part the sub-network does not use
            groups[name] = rel_l2(mg[idx], g[idx])
            if gp is not None:
                sens[name] = rel_l2(gp[idx], g[idx])
        res["grad_rel_l2"] = groups
        res["grad_rel_l2_all"] = rel_l2(mg, g)
        if gp is not None:
            res["perturb"] = args.perturb
            res["grad_sensitivity"] = sens
        ok &= all(v <= max(args.grad_tol, 2 * sens.get(k, 0.0)) for k, v in groups.items())
        ok &= res["loss_rel"] <= args.fwd_tol
    res["pass"] = bool(ok)
    if args.json:
        print(json.dumps(res))
    else:
        print(f"twin {res['space']} {json.dumps(arch, separators=(',', ':'))} {W}x{H}, "
              f"{N} pairs:")
        print("  forward (running statistics) rel L2 per prediction, coarsest first: " +
              " ".join(f"{v:.2e}" for v in fwd) + f" (finest <= {args.fwd_tol:g})")
        if not args.no_grad:
            print("  training forward rel L2: " +
                  " ".join(f"{v:.2e}" for v in res["train_rel_l2"]))
            print(f"  loss (round {rnd}): twin {res['loss']['twin']:.7g}, runtime "
                  f"{res['loss']['runtime']:.7g} (rel {res['loss_rel']:.1e})")
            print("  gradient rel L2 per group: " +
                  ", ".join(f"{k} {v:.2e}" for k, v in res["grad_rel_l2"].items()) +
                  f" (each <= {args.grad_tol:g}); whole slab {res['grad_rel_l2_all']:.2e}")
            if "grad_sensitivity" in res:
                print(f"  the twin's own gradients at parameters x (1 + {args.perturb:g} n), rel "
                      "L2 per group: " +
                      ", ".join(f"{k} {v:.2e}" for k, v in res["grad_sensitivity"].items()) +
                      " (a group passes within the larger of the tolerance and twice this)")
        print("  " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
