/* data_preflight.c — data_preflight.h: --data-path names prefixes. */
#include "data_preflight.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg/file.h"
#include "mg/gptds.h"

#define MAX_LISTED 8

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int has_pair(const char *prefix)
{
    char p[MG_PATH_MAX];
    snprintf(p, sizeof p, "%s.idx", prefix);
    if (!exists(p)) return 0;
    snprintf(p, sizeof p, "%s.bin", prefix);
    return exists(p);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* "dir/a, dir/b" for each NAME.idx of dir with its NAME.bin, or "none". */
static void list_prefixes(const char *dir, char *buf, size_t cap)
{
    struct dirent **e;
    int n = scandir(dir, &e, NULL, by_name), shown = 0, found = 0;
    size_t at = 0;
    char prefix[MG_PATH_MAX];
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(e[i]->d_name);
        if (len > 4 && !strcmp(e[i]->d_name + len - 4, ".idx")) {
            snprintf(prefix, sizeof prefix, "%s/%.*s", dir, (int)(len - 4), e[i]->d_name);
            if (has_pair(prefix) && shown++ < MAX_LISTED && at < cap)
                at += (size_t)snprintf(buf + at, cap - at, "%s%s", found ? ", " : "", prefix);
            found += has_pair(prefix);
        }
        free(e[i]);
    }
    if (n >= 0) free(e);
    if (!found) snprintf(buf, cap, "none");
    else if (found > MAX_LISTED && at < cap)
        snprintf(buf + at, cap - at, " (%d in all)", found);
}

static mg_status check_prefix(const char *prefix)
{
    char stem[MG_PATH_MAX], dir[MG_PATH_MAX], have[1024];
    if (has_pair(prefix)) return MG_OK;
    size_t len = strlen(prefix);
    if (len > 4 && (!strcmp(prefix + len - 4, ".bin") || !strcmp(prefix + len - 4, ".idx"))) {
        snprintf(stem, sizeof stem, "%.*s", (int)(len - 4), prefix);
        MG_RETURN_IF(has_pair(stem), MG_ERR_ARG, "--data-path %s: it takes the prefix of the "
                     ".bin/.idx pair: --data-path %s", prefix, stem);
    }
    if (mg_is_dir(prefix)) {
        list_prefixes(prefix, have, sizeof have);
        return mg_error_set(MG_ERR_ARG, "--data-path %s is a folder: it takes a prefix "
                            "(PREFIX.bin and PREFIX.idx); the prefixes there: %s", prefix, have);
    }
    const char *slash = strrchr(prefix, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - prefix) : 1, slash ? prefix : ".");
    snprintf(stem, sizeof stem, "%s.idx", prefix);
    const char *missing = exists(stem) ? ".bin" : ".idx";
    MG_RETURN_IF(!mg_is_dir(dir), MG_ERR_ARG, "--data-path %s: %s%s is missing (no folder %s)",
                 prefix, prefix, missing, dir);
    list_prefixes(dir, have, sizeof have);
    return mg_error_set(MG_ERR_ARG, "--data-path %s: %s%s is missing (the prefixes in %s: %s)",
                        prefix, prefix, missing, dir, have);
}

mg_status mg_train_data_preflight(const mg_train_opts *o)
{
    if (o->mock_data || !o->n_data_path) return MG_OK;
    mg_gpt_blend b;
    memset(&b, 0, sizeof b);
    mg_status st = mg_gpt_blend_parse(&b, o->data_path, o->n_data_path);
    for (size_t i = 0; st == MG_OK && i < b.n; i++) st = check_prefix(b.prefixes[i]);
    mg_gpt_blend_clear(&b);
    return st;
}
