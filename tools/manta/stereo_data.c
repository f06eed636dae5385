/* manta stereo-data: a set of procedural stereo pairs (data/stereo_synth.h) written to a
 * folder in the KITTI layout, so that other programs (OpenCV's SGBM in make bench-stereo,
 * a person's own tools) read the very pairs manta trains and evaluates on. */
#include <stdio.h>

#include "cmd.h"
#include "common/opts.h"
#include "data/stereo_folder.h"
#include "data/stereo_synth.h"

int cmd_stereo_data(int argc, char **argv)
{
    long count = 100, base = 0, seed = 1;
    int width = 128, height = 64;
    double max_disp = 32;
    bool flat = false, json = false;
    const opt_def defs[] = {
        {.name = "count", .kind = OPT_LONG, .dest = &count, .lo = 1, .hi = 1000000,
         .metavar = "N", .help = "pairs (default 100)"},
        {.name = "width", .kind = OPT_INT, .dest = &width, .lo = STEREO_SYNTH_MIN_SIDE,
         .hi = 8192, .metavar = "W", .help = "width in pixels (default 128)"},
        {.name = "height", .kind = OPT_INT, .dest = &height, .lo = STEREO_SYNTH_MIN_SIDE,
         .hi = 8192, .metavar = "H", .help = "height in pixels (default 64)"},
        {.name = "max-disp", .kind = OPT_DOUBLE, .dest = &max_disp, .lo = 0.5, .hi = 255,
         .metavar = "D", .help = "largest disparity in pixels (default 32; at most W/2)"},
        {.name = "seed", .kind = OPT_LONG, .dest = &seed, .lo = 0, .hi = 1e15, .metavar = "S",
         .help = "seed of the set (default 1; manta train's held-out pairs use their own)"},
        {.name = "first", .kind = OPT_LONG, .dest = &base, .lo = 0, .hi = 1e15,
         .metavar = "I", .help = "generator index of the first pair (default 0)"},
        {.name = "no-photometric", .kind = OPT_FLAG, .dest = &flat,
         .help = "the same radiance in both views (no gain, gamma or noise per view)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta stereo-data",
        "OUT_DIR [--count N] [--width W] [--height H] [--max-disp D] [--seed S]\n"
        "                         [--first I] [--no-photometric] [--json]",
        "Writes N procedural stereo pairs (layered textured shapes over a slanted\n"
        "background, sub-pixel disparity, occlusions, photometric differences between the\n"
        "views) to OUT_DIR in the KITTI layout: image_2/ and image_3/ (left and right,\n"
        "8-bit RGB PNG), disp_occ_0/ (every pixel) and disp_noc_0/ (pixels seen by both\n"
        "views), 16-bit PNG of disparity * 256. Pair i is generator index I + i of the\n"
        "set with seed S: the same arguments always write the same files.\n",
        defs, 1, 1};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    const char *out = argv[first];
    if (max_disp > width / 2.0) {
        fprintf(stderr, "manta stereo-data: --max-disp %g exceeds half the width (%d)\n",
                max_disp, width);
        return 2;
    }
    stereo_synth_opts o;
    stereo_synth_opts_default(&o, width, height, (float)max_disp, (uint64_t)seed);
    o.photometric = !flat;
    manta_err err = {0};
    stereo_pair p;
    manta_status st = stereo_pair_alloc(&p, height, width, &err);
    double t0 = cmd_now();
    for (long i = 0; i < count && st == MANTA_OK; i++) {
        st = stereo_synth_generate(&o, (uint64_t)(base + i), &p, &err);
        if (st == MANTA_OK)
            st = stereo_folder_write_kitti(out, (int)i, &p, &err);
        if (st == MANTA_OK && !json && count >= 20 && (i + 1) % (count / 10) == 0)
            fprintf(stderr, "manta stereo-data: %ld of %ld pairs\n", i + 1, count);
    }
    stereo_pair_free(&p);
    if (st != MANTA_OK) {
        cmd_error("stereo-data", st, &err);
        return 1;
    }
    double secs = cmd_now() - t0;
    if (json) {
        printf("{\"out\":");
        cmd_json_str(stdout, out);
        printf(",\"pairs\":%ld,\"width\":%d,\"height\":%d,\"max_disp\":%g,\"seed\":%ld,"
               "\"first\":%ld,\"photometric\":%s,\"seconds\":%.3f,",
               count, width, height, max_disp, seed, base, flat ? "false" : "true", secs);
        cmd_json_version(stdout);
        printf("}\n");
    } else {
        printf("wrote %ld pairs of %dx%d (disparity up to %g px, seed %ld) to %s in %.2f s\n",
               count, width, height, max_disp, seed, out, secs);
    }
    return 0;
}
