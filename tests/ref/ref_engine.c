#include "ref_engine.h"

#include <math.h>

int re_out_size(int in, int k, int s, int padding)
{
    return padding == 0 ? (in + s - 1) / s : (in - k + 1 + s - 1) / s;
}

int re_pad_before(int in, int k, int s, int padding)
{
    int out = re_out_size(in, k, s, padding);
    int total = (out - 1) * s + k - in;
    return total > 0 ? total / 2 : 0;
}

double re_act(int act, double x)
{
    switch (act) {
    case 1: return x > 0 ? x : 0;
    case 2: return x < -1 ? -1 : x > 1 ? 1 : x;
    case 3: return x < 0 ? 0 : x > 6 ? 6 : x;
    default: return x;
    }
}

void re_conv2d(const double *in, int n, int h, int w, int ci, const double *wt, int co, int kh,
               int kw, const double *bias, int sh, int sw, int padding, int act, double *out)
{
    int oh = re_out_size(h, kh, sh, padding), ow = re_out_size(w, kw, sw, padding);
    int ph = re_pad_before(h, kh, sh, padding), pw = re_pad_before(w, kw, sw, padding);
    for (int b = 0; b < n; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                for (int o = 0; o < co; o++) {
                    double s = bias ? bias[o] : 0;
                    for (int i = 0; i < kh; i++)
                        for (int j = 0; j < kw; j++) {
                            int iy = y * sh - ph + i, ix = x * sw - pw + j;
                            if (iy < 0 || iy >= h || ix < 0 || ix >= w)
                                continue;
                            for (int c = 0; c < ci; c++)
                                s += in[((b * h + iy) * w + ix) * ci + c] *
                                     wt[((o * kh + i) * kw + j) * ci + c];
                        }
                    out[((b * oh + y) * ow + x) * co + o] = re_act(act, s);
                }
}

void re_depthwise(const double *in, int n, int h, int w, int ci, const double *wt, int m, int kh,
                  int kw, const double *bias, int sh, int sw, int padding, int act, double *out)
{
    int oh = re_out_size(h, kh, sh, padding), ow = re_out_size(w, kw, sw, padding);
    int ph = re_pad_before(h, kh, sh, padding), pw = re_pad_before(w, kw, sw, padding);
    int co = ci * m;
    for (int b = 0; b < n; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                for (int c = 0; c < ci; c++)
                    for (int q = 0; q < m; q++) {
                        int o = c * m + q;
                        double s = bias ? bias[o] : 0;
                        for (int i = 0; i < kh; i++)
                            for (int j = 0; j < kw; j++) {
                                int iy = y * sh - ph + i, ix = x * sw - pw + j;
                                if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                                    s += in[((b * h + iy) * w + ix) * ci + c] *
                                         wt[(i * kw + j) * co + o];
                            }
                        out[((b * oh + y) * ow + x) * co + o] = re_act(act, s);
                    }
}

/* Gather form: output pixel (y, x) collects every (input pixel, tap) with
 * input*s + tap - pad = output. */
void re_transpose_conv(const double *in, int n, int h, int w, int ci, const double *wt, int co,
                       int kh, int kw, const double *bias, int sh, int sw, int padding, int oh,
                       int ow, int act, double *out)
{
    int ph = re_pad_before(oh, kh, sh, padding), pw = re_pad_before(ow, kw, sw, padding);
    for (int b = 0; b < n; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                for (int o = 0; o < co; o++) {
                    double s = bias ? bias[o] : 0;
                    for (int i = 0; i < kh; i++)
                        for (int j = 0; j < kw; j++) {
                            int ty = y + ph - i, tx = x + pw - j;
                            if (ty < 0 || tx < 0 || ty % sh || tx % sw)
                                continue;
                            int iy = ty / sh, ix = tx / sw;
                            if (iy >= h || ix >= w)
                                continue;
                            for (int c = 0; c < ci; c++)
                                s += in[((b * h + iy) * w + ix) * ci + c] *
                                     wt[((o * kh + i) * kw + j) * ci + c];
                        }
                    out[((b * oh + y) * ow + x) * co + o] = re_act(act, s);
                }
}

void re_avg_pool(const double *in, int n, int h, int w, int c, int fh, int fw, int sh, int sw,
                 int padding, int act, double *out)
{
    int oh = re_out_size(h, fh, sh, padding), ow = re_out_size(w, fw, sw, padding);
    int ph = re_pad_before(h, fh, sh, padding), pw = re_pad_before(w, fw, sw, padding);
    for (int b = 0; b < n; b++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                for (int k = 0; k < c; k++) {
                    double s = 0;
                    int cnt = 0;
                    for (int i = 0; i < fh; i++)
                        for (int j = 0; j < fw; j++) {
                            int iy = y * sh - ph + i, ix = x * sw - pw + j;
                            if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
                                s += in[((b * h + iy) * w + ix) * c + k];
                                cnt++;
                            }
                        }
                    out[((b * oh + y) * ow + x) * c + k] = re_act(act, s / cnt);
                }
}

void re_mean_hw(const double *in, int n, int h, int w, int c, double *out)
{
    for (int b = 0; b < n; b++)
        for (int k = 0; k < c; k++) {
            double s = 0;
            for (int i = 0; i < h * w; i++)
                s += in[(b * h * w + i) * c + k];
            out[b * c + k] = s / (h * w);
        }
}

void re_fully_connected(const double *in, int batches, int depth, const double *wt, int units,
                        const double *bias, int act, double *out)
{
    for (int b = 0; b < batches; b++)
        for (int u = 0; u < units; u++) {
            double s = bias ? bias[u] : 0;
            for (int i = 0; i < depth; i++)
                s += in[b * depth + i] * wt[u * depth + i];
            out[b * units + u] = re_act(act, s);
        }
}

void re_softmax(const double *in, int rows, int cols, double beta, double *out)
{
    for (int r = 0; r < rows; r++) {
        double mx = in[r * cols], sum = 0;
        for (int i = 1; i < cols; i++)
            if (in[r * cols + i] > mx)
                mx = in[r * cols + i];
        for (int i = 0; i < cols; i++)
            sum += exp(beta * (in[r * cols + i] - mx));
        for (int i = 0; i < cols; i++)
            out[r * cols + i] = exp(beta * (in[r * cols + i] - mx)) / sum;
    }
}

static int bidx(const int *d, int n, int h, int w, int c)
{
    n = d[0] == 1 ? 0 : n;
    h = d[1] == 1 ? 0 : h;
    w = d[2] == 1 ? 0 : w;
    c = d[3] == 1 ? 0 : c;
    return ((n * d[1] + h) * d[2] + w) * d[3] + c;
}

void re_binary(int op, const double *a, const int *ad, const double *b, const int *bd,
               const int *od, int act, double *out)
{
    for (int n = 0; n < od[0]; n++)
        for (int h = 0; h < od[1]; h++)
            for (int w = 0; w < od[2]; w++)
                for (int c = 0; c < od[3]; c++) {
                    double x = a[bidx(ad, n, h, w, c)], y = b[bidx(bd, n, h, w, c)];
                    out[((n * od[1] + h) * od[2] + w) * od[3] + c] =
                        re_act(act, op ? x * y : x + y);
                }
}

double re_unary(int kind, double x, double alpha)
{
    switch (kind) {
    case 0: return x > 0 ? x : 0;
    case 1: return x < 0 ? 0 : x > 6 ? 6 : x;
    case 2: return x * (x + 3 < 0 ? 0 : x + 3 > 6 ? 6 : x + 3) / 6;
    case 3: return 1 / (1 + exp(-x));
    default: return x >= 0 ? x : alpha * x;
    }
}

void re_concat(int n_in, const double *const *in, const int *const *dims, int rank, int axis,
               double *out)
{
    int outer = 1, inner = 1, total = 0;
    for (int k = 0; k < axis; k++)
        outer *= dims[0][k];
    for (int k = axis + 1; k < rank; k++)
        inner *= dims[0][k];
    for (int i = 0; i < n_in; i++)
        total += dims[i][axis];
    for (int o = 0; o < outer; o++) {
        int at = 0;
        for (int i = 0; i < n_in; i++) {
            int len = dims[i][axis] * inner;
            for (int e = 0; e < len; e++)
                out[(o * total) * inner + at + e] = in[i][o * len + e];
            at += len;
        }
    }
}

void re_pad(const double *in, int rank, const int *dims, const int *paddings, double *out)
{
    int od[4], n_out = 1, n_in = 1;
    for (int k = 0; k < rank; k++) {
        od[k] = dims[k] + paddings[2 * k] + paddings[2 * k + 1];
        n_out *= od[k];
        n_in *= dims[k];
    }
    for (int i = 0; i < n_out; i++)
        out[i] = 0;
    for (int i = 0; i < n_in; i++) {
        int rest = i, o = 0, stride = 1, idx[4];
        for (int k = rank - 1; k >= 0; k--) {
            idx[k] = rest % dims[k];
            rest /= dims[k];
        }
        for (int k = rank - 1; k >= 0; k--) {
            o += (idx[k] + paddings[2 * k]) * stride;
            stride *= od[k];
        }
        out[o] = in[i];
    }
}
