/* outdir.c — atomic output directories: everything is written under DST/.tmp-XXXXXX and
 * moved into DST at the end, the file that marks a checkpoint complete (the Megatron tracker
 * or config.json) last; a failed run removes the temporary tree and a DST it created.
 *
 * Contract (ckpt.h): DST must not exist, or be an empty directory (MG_ERR_ARG otherwise).
 */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "mg/file.h"

static mg_status dir_empty(const char *dst)
{
    DIR *d = opendir(dst);
    if (!d) return mg_error_errno(errno, "%s: cannot open the output directory", dst);
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
    closedir(d);
    MG_RETURN_IF(!empty, MG_ERR_ARG, "%s: the output directory exists and is not empty", dst);
    return MG_OK;
}

mg_status ck_outdir_begin(const char *dst, char **tmp, int *created)
{
    struct stat st;
    *tmp = NULL;
    *created = 0;
    if (stat(dst, &st) == 0) {
        MG_RETURN_IF(!S_ISDIR(st.st_mode), MG_ERR_ARG, "%s: exists and is not a directory", dst);
        MG_FORWARD(dir_empty(dst));
    } else {
        char probe[MG_PATH_MAX];
        snprintf(probe, sizeof probe, "%s/x", dst);
        MG_FORWARD(ck_mkdirs_for(probe));
        *created = 1;
    }
    size_t n = strlen(dst) + 16;
    *tmp = mg_malloc(n);
    if (!*tmp) return MG_ERR_NOMEM;
    snprintf(*tmp, n, "%s/.tmp-XXXXXX", dst);
    if (!mkdtemp(*tmp)) {
        mg_status s = mg_error_errno(errno, "%s: cannot create a temporary directory", dst);
        free(*tmp);
        *tmp = NULL;
        return s;
    }
    return MG_OK;
}

static mg_status move(const char *tmp, const char *dst, const char *name)
{
    char a[MG_PATH_MAX], b[MG_PATH_MAX];
    snprintf(a, sizeof a, "%s/%s", tmp, name);
    snprintf(b, sizeof b, "%s/%s", dst, name);
    if (rename(a, b) != 0) return mg_error_errno(errno, "%s: cannot move into place", b);
    return MG_OK;
}

mg_status ck_outdir_commit(const char *dst, const char *tmp, const char *last)
{
    DIR *d = opendir(tmp);
    if (!d) return mg_error_errno(errno, "%s: cannot open", tmp);
    mg_status st = MG_OK;
    int have_last = 0;
    for (struct dirent *e; st == MG_OK && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (last && !strcmp(e->d_name, last)) have_last = 1;
        else st = move(tmp, dst, e->d_name);
    }
    closedir(d);
    if (st == MG_OK && have_last) st = move(tmp, dst, last);
    if (st == MG_OK && rmdir(tmp) != 0) st = mg_error_errno(errno, "%s: cannot remove", tmp);
    return st;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) != 0 ? 0 : 0;
}

void ck_outdir_abort(const char *dst, const char *tmp, int created)
{
    if (tmp) nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (created && dst) rmdir(dst);
}
