#include "data/png_io.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

/* zlib level of written files: fast, a few percent larger than the default 6. */
#define MPNG_ZLIB_LEVEL 3

/*
 * Everything one libpng call touches lives on the heap, so its values are
 * well defined after libpng's error handler jumps back (automatic variables
 * changed after setjmp would not be).
 */
typedef struct pio {
    jmp_buf jb;
    char msg[200];
    int oom;
    png_structp png;
    png_infop info;
    FILE *f;
    unsigned char *pixels; /* read: decoded image */
    png_bytep *rows;
    unsigned char *buf; /* write: the file being built */
    size_t len, cap;
} pio;

static void pio_error(png_structp png, png_const_charp msg)
{
    pio *c = png_get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg);
    longjmp(c->jb, 1);
}

static void pio_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static int host_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static const char *color_name(int ctype)
{
    switch (ctype) {
    case PNG_COLOR_TYPE_GRAY: return "gray";
    case PNG_COLOR_TYPE_GRAY_ALPHA: return "gray+alpha";
    case PNG_COLOR_TYPE_PALETTE: return "palette";
    case PNG_COLOR_TYPE_RGB: return "RGB";
    case PNG_COLOR_TYPE_RGB_ALPHA: return "RGBA";
    default: return "unknown colour type";
    }
}

static void pio_free(pio *c, int writing)
{
    if (c->png) {
        if (writing)
            png_destroy_write_struct(&c->png, c->info ? &c->info : NULL);
        else
            png_destroy_read_struct(&c->png, c->info ? &c->info : NULL, NULL);
    }
    if (c->f)
        fclose(c->f);
    free(c->pixels);
    free(c->rows);
    free(c->buf);
    free(c);
}

/* Read @p path: 8-bit samples with @p channels channels, or (channels 0) 16-bit gray. */
static manta_status read_png(const char *path, int channels, void **out, int *height, int *width,
                             manta_err *err)
{
    *out = NULL;
    *height = *width = 0;
    pio *c = calloc(1, sizeof *c);
    if (!c)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    manta_status st = MANTA_OK;
    unsigned char sig[8];
    c->f = fopen(path, "rb");
    if (!c->f) {
        st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        goto done;
    }
    if (fread(sig, 1, sizeof sig, c->f) != sizeof sig || png_sig_cmp(sig, 0, sizeof sig) != 0) {
        st = ferror(c->f) ? manta_err_set(err, MANTA_ERR_IO, "%s: cannot read", path)
                          : manta_err_set(err, MANTA_ERR_FORMAT, "%s: not a PNG file", path);
        goto done;
    }
    c->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, c, pio_error, pio_warning);
    if (c->png)
        c->info = png_create_info_struct(c->png);
    if (!c->png || !c->info) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for the PNG decoder", path);
        goto done;
    }
    if (setjmp(c->jb)) {
        st = manta_err_set(err, c->oom ? MANTA_ERR_NO_MEMORY : MANTA_ERR_FORMAT,
                           "%s: PNG error: %s", path, c->msg);
        goto done;
    }
    png_init_io(c->png, c->f);
    png_set_sig_bytes(c->png, sizeof sig);
    png_read_info(c->png, c->info);
    png_uint_32 pw = 0, ph = 0;
    int depth = 0, ctype = 0, ilace = 0;
    png_get_IHDR(c->png, c->info, &pw, &ph, &depth, &ctype, &ilace, NULL, NULL);
    if ((unsigned long long)pw * ph > (unsigned long long)MPNG_MAX_PIXELS) {
        st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: %lux%lu pixels, more than the %ld allowed",
                           path, (unsigned long)pw, (unsigned long)ph, (long)MPNG_MAX_PIXELS);
        goto done;
    }
    size_t sample_bytes;
    if (channels == 0) {
        if (ctype != PNG_COLOR_TYPE_GRAY || depth != 16) {
            st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: %d-bit %s PNG, expected 16-bit gray",
                               path, depth, color_name(ctype));
            goto done;
        }
        if (host_little_endian())
            png_set_swap(c->png);
        sample_bytes = 2;
    } else {
        if (depth == 16)
            png_set_scale_16(c->png);
        if (ctype == PNG_COLOR_TYPE_PALETTE)
            png_set_palette_to_rgb(c->png);
        if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8)
            png_set_expand_gray_1_2_4_to_8(c->png);
        if (ctype & PNG_COLOR_MASK_ALPHA)
            png_set_strip_alpha(c->png);
        int colour = ctype == PNG_COLOR_TYPE_PALETTE || (ctype & PNG_COLOR_MASK_COLOR);
        if (channels == 3 && !colour)
            png_set_gray_to_rgb(c->png);
        if (channels == 1 && colour)
            png_set_rgb_to_gray_fixed(c->png, 1, -1, -1);
        sample_bytes = (size_t)channels;
    }
    if (ilace != PNG_INTERLACE_NONE)
        png_set_interlace_handling(c->png);
    png_read_update_info(c->png, c->info);
    size_t rowbytes = png_get_rowbytes(c->png, c->info);
    if (rowbytes != (size_t)pw * sample_bytes) {
        st = manta_err_set(err, MANTA_ERR_INTERNAL,
                           "%s: decoded rows of %zu bytes, expected %zu (%d-bit %s)", path,
                           rowbytes, (size_t)pw * sample_bytes, depth, color_name(ctype));
        goto done;
    }
    c->pixels = malloc(rowbytes * ph);
    c->rows = malloc(sizeof *c->rows * ph);
    if (!c->pixels || !c->rows) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for %lux%lu pixels", path,
                           (unsigned long)pw, (unsigned long)ph);
        goto done;
    }
    for (png_uint_32 y = 0; y < ph; y++)
        c->rows[y] = c->pixels + (size_t)y * rowbytes;
    png_read_image(c->png, c->rows);
    png_read_end(c->png, NULL);
    *out = c->pixels;
    c->pixels = NULL;
    *height = (int)ph;
    *width = (int)pw;
done:
    pio_free(c, 0);
    return st;
}

manta_status mpng_read_u8(const char *path, int channels, uint8_t **pixels, int *height, int *width,
                          manta_err *err)
{
    if (channels != 1 && channels != 3) {
        *pixels = NULL;
        *height = *width = 0;
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "%s: channels is %d (must be 1 or 3)",
                             path, channels);
    }
    void *p;
    manta_status st = read_png(path, channels, &p, height, width, err);
    *pixels = p;
    return st;
}

manta_status mpng_read_gray16(const char *path, uint16_t **pixels, int *height, int *width,
                              manta_err *err)
{
    void *p;
    manta_status st = read_png(path, 0, &p, height, width, err);
    *pixels = p;
    return st;
}

static void pio_write_data(png_structp png, png_bytep data, size_t n)
{
    pio *c = png_get_io_ptr(png);
    if (n > c->cap - c->len) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap - c->len < n)
            cap *= 2;
        unsigned char *b = realloc(c->buf, cap);
        if (!b) {
            c->oom = 1;
            png_error(png, "out of memory for the encoded file");
        }
        c->buf = b;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, data, n);
    c->len += n;
}

static void pio_flush(png_structp png) { (void)png; }

static manta_status write_png(const char *path, const void *pixels, int height, int width,
                              int ctype, int depth, manta_err *err)
{
    if (height < 1 || width < 1 || (long long)height * width > MPNG_MAX_PIXELS)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s: image of %dx%d pixels (sides must be >= 1, at most %ld pixels)",
                             path, width, height, (long)MPNG_MAX_PIXELS);
    const size_t rowbytes =
        (size_t)width * (ctype == PNG_COLOR_TYPE_RGB ? 3 : 1) * (depth == 16 ? 2 : 1);
    pio *c = calloc(1, sizeof *c);
    if (!c)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    manta_status st = MANTA_OK;
    c->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, c, pio_error, pio_warning);
    if (c->png)
        c->info = png_create_info_struct(c->png);
    c->rows = malloc(sizeof *c->rows * (size_t)height);
    if (!c->png || !c->info || !c->rows) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for the PNG encoder", path);
        goto done;
    }
    if (setjmp(c->jb)) {
        st = manta_err_set(err, c->oom ? MANTA_ERR_NO_MEMORY : MANTA_ERR_INTERNAL,
                           "%s: PNG error: %s", path, c->msg);
        goto done;
    }
    png_set_write_fn(c->png, c, pio_write_data, pio_flush);
    png_set_IHDR(c->png, c->info, (png_uint_32)width, (png_uint_32)height, depth, ctype,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(c->png, MPNG_ZLIB_LEVEL);
    png_write_info(c->png, c->info);
    if (depth == 16 && host_little_endian())
        png_set_swap(c->png);
    for (int y = 0; y < height; y++) /* libpng copies each row before transforming it */
        c->rows[y] = (png_bytep)(uintptr_t)((const unsigned char *)pixels + (size_t)y * rowbytes);
    png_write_image(c->png, c->rows);
    png_write_end(c->png, NULL);
    st = manta_file_write_atomic(path, c->buf, c->len, err);
done:
    pio_free(c, 1);
    return st;
}

manta_status mpng_write_rgb8(const char *path, const uint8_t *pixels, int height, int width,
                             manta_err *err)
{
    return write_png(path, pixels, height, width, PNG_COLOR_TYPE_RGB, 8, err);
}

manta_status mpng_write_gray8(const char *path, const uint8_t *pixels, int height, int width,
                              manta_err *err)
{
    return write_png(path, pixels, height, width, PNG_COLOR_TYPE_GRAY, 8, err);
}

manta_status mpng_write_gray16(const char *path, const uint16_t *pixels, int height, int width,
                               manta_err *err)
{
    return write_png(path, pixels, height, width, PNG_COLOR_TYPE_GRAY, 16, err);
}
