/**
 * @file assets.h
 * @brief The monitor page's files (runtime/monitor_http/page/), embedded at build
 *        time by tools/gen/embed.c into $(BUILD)/gen/monitor_page.c.
 */
#ifndef MANTA_MONITOR_HTTP_ASSETS_H
#define MANTA_MONITOR_HTTP_ASSETS_H

#include <stddef.h>

/** One file of the page. */
typedef struct mon_asset {
    const char *path; /**< URL path: "/index.html", "/app.js", "/style.css" */
    const char *type; /**< Content-Type */
    const char *data; /**< the bytes (static; NUL after them) */
    size_t size;      /**< bytes, without the NUL */
} mon_asset;

extern const mon_asset mon_assets[];
extern const size_t mon_assets_count;

/** The asset served at @p path, or NULL. */
const mon_asset *mon_asset_find(const char *path);

#endif
