/* manta image: one image of a data set written as a JPEG (TurboJPEG), with its
 * label, so that the board program manta-infer can be tried on a real input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "cmd.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "rundata.h"

int cmd_image(int argc, char **argv)
{
    const char *out = NULL, *data = "fashion-mnist", *split = "test";
    long index = 0, quality = 95;
    bool json = false;
    static const char *const splits[] = {"test", "train", NULL};
    const opt_def defs[] = {
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &out,
         .metavar = "IMAGE.jpg",
         .help = "the JPEG to write (required)"},
        {.name = "data",
         .kind = OPT_STRING,
         .dest = &data,
         .metavar = "D",
         .help = "fashion-mnist (default), an IDX folder or a JPEG folder (as manta train --data)"},
        {.name = "split",
         .kind = OPT_STRING,
         .dest = &split,
         .choices = splits,
         .metavar = "test|train",
         .help = "the split (default test)"},
        {.name = "index",
         .kind = OPT_LONG,
         .dest = &index,
         .lo = 0,
         .hi = 1L << 30,
         .metavar = "N",
         .help = "the image (default 0)"},
        {.name = "quality",
         .kind = OPT_LONG,
         .dest = &quality,
         .lo = 1,
         .hi = 100,
         .metavar = "Q",
         .help = "JPEG quality (default 95)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta image",
        "--out IMAGE.jpg [--data D] [--split test|train] [--index N]\n"
        "                   [--quality Q] [--json]",
        "Writes image N (default 0) of the data set's test split (default; --split\n"
        "train: the training images) as a JPEG (quality Q, default 95), gray or RGB as\n"
        "stored, at its stored size, and prints its label. D: fashion-mnist (default),\n"
        "an IDX folder or a JPEG folder (as manta train --data).\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!out) {
        fprintf(stderr, "manta image: --out IMAGE.jpg is required\n");
        return 2;
    }
    if (!out_check_file("manta image", "out", out))
        return 2;
    run_data rd;
    if (!run_data_load("image", data, 3, 0, 1, false, &rd))
        return 1;
    const dataset *set = !strcmp(split, "test") ? &rd.test : &rd.train;
    int rc = 1;
    unsigned char *jpg = NULL;
    unsigned long jpg_size = 0;
    tjhandle tj = NULL;
    FILE *f = NULL;
    if (index >= set->count) {
        fprintf(stderr, "manta image: %s has %d %s images, no image %ld\n", data, set->count, split,
                index);
        goto out;
    }
    const int h = set->height[index], w = set->width[index], c = set->channels;
    if (!(tj = tjInitCompress()) ||
        tjCompress2(tj, set->pixels + set->offset[index], w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB,
                    &jpg, &jpg_size, c == 1 ? TJSAMP_GRAY : TJSAMP_444, (int)quality,
                    TJFLAG_ACCURATEDCT) != 0) {
        fprintf(stderr, "manta image: JPEG encoding failed: %s\n", tjGetErrorStr2(tj));
        goto out;
    }
    if (!(f = fopen(out, "wb")) || fwrite(jpg, 1, jpg_size, f) != jpg_size) {
        fprintf(stderr, "manta image: %s: cannot write: %s\n", out, strerror(errno));
        goto out;
    }
    if (fclose(f) != 0) {
        f = NULL;
        fprintf(stderr, "manta image: %s: cannot write: %s\n", out, strerror(errno));
        goto out;
    }
    f = NULL;
    const int label = set->labels[index];
    const char *name = set->class_names && label < set->classes ? set->class_names[label] : "";
    if (json) {
        printf("{\"image\":");
        cmd_json_str(stdout, out);
        printf(",\"split\":\"%s\",\"index\":%ld,\"label\":%d,\"class\":", split, index, label);
        cmd_json_str(stdout, name);
        printf(",\"width\":%d,\"height\":%d,\"channels\":%d,\"bytes\":%lu,", w, h, c, jpg_size);
        cmd_json_version(stdout);
        printf("}\n");
    } else
        printf("%s: %s image %ld of %s, %dx%d %s, label %d (%s), %lu bytes\n", out, split, index,
               data, w, h, c == 1 ? "gray" : "RGB", label, name, jpg_size);
    rc = 0;
out:
    if (f)
        fclose(f);
    tjFree(jpg);
    if (tj)
        tjDestroy(tj);
    run_data_free(&rd);
    return rc;
}
