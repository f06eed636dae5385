/**
 * @file names.h
 * @brief Sorted lists of file and folder names, and "dir/name" paths, for the
 *        folder loaders of runtime/data/ (internal: jpeg_folder.c,
 *        stereo_folder.c, photo_bank.c).
 *
 * A ::name_list owns malloc'd copies of its names. Start from a zeroed list
 * (`name_list l = {0};`), add with data_name_list_push(), order with
 * data_name_list_sort() (strcmp order, the order every loader lists folders in, so
 * labels and pair indices do not depend on readdir()), release with
 * data_name_list_free(). Not thread-safe per list; the functions keep no state.
 */
#ifndef MANTA_DATA_NAMES_H
#define MANTA_DATA_NAMES_H

/** A growable list of owned names. */
typedef struct name_list {
    char **v; /**< (n) the names, each malloc'd and owned by the list */
    int n;    /**< names held */
    int cap;  /**< entries allocated in v */
} name_list;

/**
 * Append a copy of @p s (NUL-terminated) to @p l.
 * @return 1, or 0 when out of memory (then @p l is unchanged).
 */
int data_name_list_push(name_list *l, const char *s);

/** Sort the names of @p l by strcmp (ascending). */
void data_name_list_sort(name_list *l);

/** Free every name and the array; the list is zeroed. */
void data_name_list_free(name_list *l);

/** "dir/name" in a malloc'd string the caller frees; NULL when out of memory. */
char *data_name_path(const char *dir, const char *name);

#endif
