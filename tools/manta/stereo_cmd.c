/* What the commands taking a stereo checkpoint share: the sub-network argument and the
 * run's re-calibration pairs. */
#include "stereo_cmd.h"

#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

bool stereo_cmd_ckpt_arg(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--ckpt") && i + 1 < argc)
            v = argv[i + 1];
        else if (!strncmp(argv[i], "--ckpt=", 7))
            v = argv[i] + 7;
        stereo_space sp;
        stereo_meta m;
        manta_err err = {0};
        if (v && stereo_state_peek(v, &sp, &m, &err) == MANTA_OK)
            return true;
    }
    return false;
}

bool stereo_cmd_help_arg(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return true;
    return false;
}

manta_status stereo_cmd_arch(const stereo_space *sp, const char *arg, ofa_arch *a, manta_err *err)
{
    if (!strcmp(arg, "max")) {
        stereo_arch_max(sp, a);
        return MANTA_OK;
    }
    if (!strcmp(arg, "min")) {
        stereo_arch_min(sp, a);
        return MANTA_OK;
    }
    char *text = NULL;
    size_t len;
    manta_status st = manta_file_read(arg, 1 << 20, &text, &len, err);
    if (st == MANTA_OK)
        st = stereo_arch_parse(sp, text, a, err);
    free(text);
    return st;
}

manta_status stereo_recal_open(const stereo_meta *m, const stereo_space *sp, const char *recal_data,
                               bool photos, stereo_recal_src *r, manta_err *err)
{
    memset(r, 0, sizeof *r);
    const char *rd = recal_data ? recal_data : m->data;
    r->src = (stereo_source){.kind = STEREO_SOURCE_SYNTH, .count = m->train_pairs};
    stereo_synth_opts_default(&r->src.synth, sp->crop_w, sp->crop_h, (float)sp->max_disp, m->seed);
    r->folder = strcmp(rd, "synthetic") != 0;
    if (!r->folder || photos)
        MANTA_TRY(stereo_state_photos(m, sp, &r->photos, NULL, err));
    r->src.synth.photos = r->photos.count > 0 ? &r->photos : NULL;
    if (!r->folder)
        return MANTA_OK;
    manta_err ferr = {0};
    if (stereo_folder_open(rd, STEREO_LAYOUT_AUTO, &r->set, &ferr) != MANTA_OK) {
        photo_bank_free(&r->photos);
        r->folder = false;
        return manta_err_set(err, MANTA_ERR_IO,
                             "re-calibration data%s: %s (--recal-data D: another folder, or "
                             "synthetic)",
                             recal_data ? "" : " (the run's training folder)", ferr.msg);
    }
    r->src = (stereo_source){.kind = STEREO_SOURCE_FOLDER, .count = r->set.count, .set = &r->set};
    return MANTA_OK;
}

void stereo_recal_close(stereo_recal_src *r)
{
    if (r->folder)
        stereo_set_free(&r->set);
    photo_bank_free(&r->photos);
    memset(r, 0, sizeof *r);
}
