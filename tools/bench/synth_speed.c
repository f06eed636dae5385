/* Milliseconds per procedural stereo pair (data/stereo_synth.h) on one CPU thread: the plain
 * procedural scenes at two sizes, then at 128x64 the photo-textured and single-photograph
 * kinds over a bank of four generated 288x192 photographs (3 x the pair's height, as
 * photo_bank_opts_for_pairs() keeps). A benchmark, not a test: `make bench-synth`.
 * usage: synth_speed [SCALE]   (SCALE multiplies the repetitions, default 1) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "data/photo_bank.h"
#include "data/stereo_pair.h"
#include "data/stereo_synth.h"

static float clamp01(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

/* A smooth RGB texture of w x h, different for every k; NULL when out of memory. */
static uint8_t *texture(int w, int h, int k)
{
    uint8_t *px = malloc((size_t)w * (size_t)h * 3);
    for (int y = 0; px && y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                float v = 0.5f + 0.22f * sinf(0.31f * x / (1 + c + k % 3) + 0.17f * y + k) +
                          0.2f * cosf(0.09f * (x + 2 * y) * (1 + 0.3f * c) - 0.7f * k);
                px[((size_t)y * w + x) * 3 + c] = (uint8_t)lroundf(255.0f * clamp01(v));
            }
    return px;
}

/* A bank of @p n textures of w x h made in memory; false when out of memory. */
static int make_bank(photo_bank *b, int n, int w, int h)
{
    memset(b, 0, sizeof *b);
    b->photos = calloc((size_t)n, sizeof *b->photos);
    b->names = calloc((size_t)n, sizeof *b->names);
    if (!b->photos || !b->names)
        return 0;
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "texture-%d", i);
        b->photos[i] = (photo){.width = w, .height = h, .rgb = texture(w, h, i)};
        b->names[i] = malloc(strlen(name) + 1);
        b->count = i + 1;
        if (!b->photos[i].rgb || !b->names[i])
            return 0;
        strcpy(b->names[i], name);
    }
    return 1;
}

/* Times @p reps pairs of @p o; prints one line; false on an error (printed). */
static int run(const char *what, const stereo_synth_opts *o, int reps)
{
    stereo_pair p;
    manta_err e;
    manta_err_clear(&e);
    if (stereo_pair_alloc(&p, o->height, o->width, &e) != MANTA_OK) {
        fprintf(stderr, "synth_speed: %s\n", e.msg);
        return 0;
    }
    double t0 = manta_now();
    manta_status st = MANTA_OK;
    for (int i = 0; i < reps && st == MANTA_OK; i++)
        st = stereo_synth_generate(o, (uint64_t)i, &p, &e);
    double t = (manta_now() - t0) / reps;
    stereo_pair_free(&p);
    if (st != MANTA_OK) {
        fprintf(stderr, "synth_speed: %s: %s\n", what, e.msg);
        return 0;
    }
    printf("%4dx%-4d %-18s %8.3f ms per pair (%d pairs)\n", o->width, o->height, what, t * 1e3,
           reps);
    return 1;
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (argc > 2 || scale < 1) {
        fprintf(stderr, "usage: synth_speed [SCALE]   (SCALE >= 1 multiplies the repetitions)\n");
        return 2;
    }
    printf("procedural stereo pairs, one thread (max disparity a quarter of the width)\n");
    static const int sizes[2][3] = {{128, 64, 32}, {768, 384, 192}};
    static const int reps[2] = {200, 4};
    int ok = 1;
    for (int s = 0; s < 2 && ok; s++) {
        stereo_synth_opts o;
        stereo_synth_opts_default(&o, sizes[s][0], sizes[s][1], (float)sizes[s][2], 1);
        ok = run("procedural", &o, reps[s] * scale);
    }
    photo_bank bank = {0};
    if (ok && !make_bank(&bank, 4, 288, 192)) {
        fprintf(stderr, "synth_speed: out of memory\n");
        ok = 0;
    }
    static const char *kinds[2] = {"photo-textured", "single photograph"};
    for (int m = 0; m < 2 && ok; m++) {
        stereo_synth_opts o;
        stereo_synth_opts_default(&o, 128, 64, 32, 1);
        o.photos = &bank;
        o.share_textured = m == 0 ? 1.0f : 0.0f;
        o.share_single = m == 1 ? 1.0f : 0.0f;
        ok = run(kinds[m], &o, 100 * scale);
    }
    photo_bank_free(&bank);
    return ok ? 0 : 1;
}
