#include "data/names.h"

#include <stdlib.h>
#include <string.h>

int data_name_list_push(name_list *l, const char *s)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return 0;
        l->v = v;
        l->cap = cap;
    }
    char *c = strdup(s);
    if (!c)
        return 0;
    l->v[l->n++] = c;
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void data_name_list_sort(name_list *l)
{
    if (l->n > 1)
        qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_str);
}

void data_name_list_free(name_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

char *data_name_path(const char *dir, const char *name)
{
    size_t la = strlen(dir), lb = strlen(name);
    char *p = malloc(la + lb + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, la);
    p[la] = '/';
    memcpy(p + la + 1, name, lb + 1);
    return p;
}
