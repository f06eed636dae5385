/* manta stereo-data: a set of procedural stereo pairs (data/stereo_synth.h) written to a
 * folder in the KITTI layout, so that other programs (OpenCV's SGBM in make bench-stereo,
 * a person's own tools) read the very pairs manta trains and evaluates on; with
 * --textures, photographic textures and single-photograph pairs (data/photo_bank.h). */
#include <stdio.h>

#include "cmd.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "data/photo_bank.h"
#include "data/stereo_folder.h"
#include "data/stereo_synth.h"

int cmd_stereo_data(int argc, char **argv)
{
    long count = 100, base = 0, seed = 1;
    int width = 128, height = 64;
    double max_disp = 32;
    bool flat = false, json = false;
    const char *textures = NULL, *out = NULL;
    double share_textured = 1.0 / 3.0, share_single = 1.0 / 3.0, shape_side = 0;
    double share_shifted = 0.5;
    const opt_def defs[] = {
        {.name = "count",
         .kind = OPT_LONG,
         .dest = &count,
         .lo = 1,
         .hi = 1000000,
         .metavar = "N",
         .help = "pairs (default 100)"},
        {.name = "width",
         .kind = OPT_INT,
         .dest = &width,
         .lo = STEREO_SYNTH_MIN_SIDE,
         .hi = 8192,
         .metavar = "W",
         .help = "width in pixels (default 128)"},
        {.name = "height",
         .kind = OPT_INT,
         .dest = &height,
         .lo = STEREO_SYNTH_MIN_SIDE,
         .hi = 8192,
         .metavar = "H",
         .help = "height in pixels (default 64)"},
        {.name = "max-disp",
         .kind = OPT_DOUBLE,
         .dest = &max_disp,
         .lo = 0.5,
         .hi = 255,
         .metavar = "D",
         .help = "largest disparity in pixels (default 32; at most W/2)"},
        {.name = "seed",
         .kind = OPT_LONG,
         .dest = &seed,
         .lo = 0,
         .hi = 1e15,
         .metavar = "S",
         .help = "seed of the set (default 1; manta train's held-out pairs use their own)"},
        {.name = "first",
         .kind = OPT_LONG,
         .dest = &base,
         .lo = 0,
         .hi = 1e15,
         .metavar = "I",
         .help = "generator index of the first pair (default 0)"},
        {.name = "no-photometric",
         .kind = OPT_FLAG,
         .dest = &flat,
         .help = "the same radiance in both views (no gain, gamma or noise per view)"},
        {.name = "textures",
         .kind = OPT_STRING,
         .dest = &textures,
         .metavar = "DIR",
         .help = "photographs for textured / single-photograph pairs, or 'default'"},
        {.name = "textured-share",
         .kind = OPT_DOUBLE,
         .dest = &share_textured,
         .lo = 0,
         .hi = 1,
         .metavar = "F",
         .help = "with --textures: share of photo-textured pairs "
                 "(default 1/3)"},
        {.name = "single-share",
         .kind = OPT_DOUBLE,
         .dest = &share_single,
         .lo = 0,
         .hi = 1,
         .metavar = "F",
         .help = "with --textures: share of single-photograph pairs "
                 "(default 1/3; the rest procedural)"},
        {.name = "shifted-share",
         .kind = OPT_DOUBLE,
         .dest = &share_shifted,
         .lo = 0,
         .hi = 1,
         .metavar = "F",
         .help = "share of scenes brought nearer as a whole (default 0.5; 0: "
                 "the pairs of before the shift)"},
        {.name = "shape-side",
         .kind = OPT_DOUBLE,
         .dest = &shape_side,
         .lo = 0,
         .hi = 8192,
         .metavar = "S",
         .help = "shapes' radii 6-35% of S px (default 0: of the shorter side)"},
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &out,
         .metavar = "DIR",
         .help = "the folder to write (or as the one argument)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta stereo-data",
        "OUT_DIR|--out DIR [--count N] [--width W] [--height H] [--max-disp D] [--seed S]\n"
        "                         [--first I] [--no-photometric] [--textures DIR|default]\n"
        "                         [--textured-share F] [--single-share F] [--shifted-share F]\n"
        "                         [--shape-side S] [--json]",
        "Writes N procedural stereo pairs (layered textured shapes over a slanted\n"
        "background, sub-pixel disparity, occlusions, photometric differences between the\n"
        "views) to OUT_DIR in the KITTI layout: image_2/ and image_3/ (left and right,\n"
        "8-bit RGB PNG), disp_occ_0/ (every pixel) and disp_noc_0/ (pixels seen by both\n"
        "views), 16-bit PNG of disparity * 256. Pair i is generator index I + i of the\n"
        "set with seed S: the same arguments always write the same files. Half of the\n"
        "scenes (--shifted-share) are brought nearer as a whole (every disparity d becomes\n"
        "a + k d, the nearest surface within D), so that large regions come near too.\n\n"
        "--textures DIR (its .jpg / .jpeg / .png files; 'default': the 12 nature photographs\n"
        "of Debian's mate-backgrounds) makes a share of the pairs with photographs: layers\n"
        "textured with crops of them (FlyingThings3D-style), and single-photograph pairs (the\n"
        "left view a photograph, its colour regions the layers of the disparity field, the\n"
        "right view rendered from them, what only the right view sees filled from another\n"
        "photograph). Never give it the views of stereo pairs: those are evaluation data.\n",
        defs,
        0,
        1};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if ((first < argc) == (out != NULL)) {
        fprintf(stderr, "manta stereo-data: %s\n",
                out ? "the folder is given twice (OUT_DIR and --out)"
                    : "needs the folder to write: OUT_DIR or --out DIR (see --help)");
        return 2;
    }
    if (!out)
        out = argv[first];
    if (max_disp > width / 2.0) {
        fprintf(stderr,
                "manta stereo-data: --max-disp %g is more than half of --width %d "
                "(%g px)\n",
                max_disp, width, width / 2.0);
        return 2;
    }
    if (!out_check_dir("manta stereo-data", "out", out))
        return 2;
    if (share_textured + share_single > 1.0 + 1e-9) {
        fprintf(stderr,
                "manta stereo-data: --textured-share %g and --single-share %g add up to "
                "more than 1\n",
                share_textured, share_single);
        return 2;
    }
    stereo_synth_opts o;
    stereo_synth_opts_default(&o, width, height, (float)max_disp, (uint64_t)seed);
    o.photometric = !flat;
    o.share_textured = (float)share_textured;
    o.share_single = (float)share_single;
    o.shape_side = (float)shape_side;
    o.share_shifted = (float)share_shifted;
    manta_err err = {0};
    photo_bank bank = {0};
    photo_bank_report rep = {0};
    if (textures) {
        photo_bank_opts bo;
        photo_bank_opts_for_pairs(&bo, width, height);
        if (photo_bank_load(photo_bank_dir(textures), &bo, &bank, &rep, &err) != MANTA_OK) {
            fprintf(stderr, "manta stereo-data: --textures %s\n", err.msg);
            return 1;
        }
        if (!json && (rep.failed > 0 || rep.too_small > 0))
            fprintf(stderr,
                    "manta stereo-data: %s: %d photograph(s) kept; %d file(s) skipped as "
                    "unreadable%s%s%s, %d smaller than %dx%d\n",
                    photo_bank_dir(textures), bank.count, rep.failed, rep.failed ? " (first: " : "",
                    rep.first_failure, rep.failed ? ")" : "", rep.too_small, width, height);
        o.photos = &bank;
    }
    long modes[3] = {0, 0, 0};
    stereo_pair p;
    manta_status st = stereo_pair_alloc(&p, height, width, &err);
    double t0 = cmd_now();
    for (long i = 0; i < count && st == MANTA_OK; i++) {
        st = stereo_synth_generate(&o, (uint64_t)(base + i), &p, &err);
        modes[stereo_synth_pair_mode(&o, (uint64_t)(base + i))]++;
        if (st == MANTA_OK)
            st = stereo_folder_write_kitti(out, (int)i, &p, &err);
        if (st == MANTA_OK && !json && count >= 20 && (i + 1) % (count / 10) == 0)
            fprintf(stderr, "manta stereo-data: %ld of %ld pairs\n", i + 1, count);
    }
    stereo_pair_free(&p);
    photo_bank_free(&bank);
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
        printf("\"textures\":");
        if (textures)
            cmd_json_str(stdout, photo_bank_dir(textures));
        else
            printf("null");
        printf(",\"photographs\":%d,\"skipped\":%d,\"modes\":{\"procedural\":%ld,"
               "\"textured\":%ld,\"single\":%ld},",
               rep.loaded, rep.failed + rep.too_small, modes[STEREO_SYNTH_PROCEDURAL],
               modes[STEREO_SYNTH_TEXTURED], modes[STEREO_SYNTH_SINGLE]);
        cmd_json_version(stdout);
        printf("}\n");
    } else {
        printf("wrote %ld pairs of %dx%d (disparity up to %g px, seed %ld) to %s in %.2f s\n",
               count, width, height, max_disp, seed, out, secs);
        if (textures)
            printf("%ld procedural, %ld photo-textured, %ld single-photograph (%d photographs "
                   "of %s)\n",
                   modes[STEREO_SYNTH_PROCEDURAL], modes[STEREO_SYNTH_TEXTURED],
                   modes[STEREO_SYNTH_SINGLE], rep.loaded, photo_bank_dir(textures));
    }
    return 0;
}
