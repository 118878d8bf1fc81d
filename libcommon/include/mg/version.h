/* mg/version.h — what a tool's --version reports: the release, the git revision the build
 * came from, and which optional parts were compiled in.
 *
 * Contract:
 *   - mg_revision() is `git describe --always --dirty` of the source tree at build time, or
 *     the REVISION file of a release tarball (make dist writes it), or "unknown".
 *   - mg_features() lists one row per MG_HAVE_* macro the build defines (mk/config.mk's
 *     DEP_CFLAGS), in a fixed order, with the macro's value; a new optional dependency is one
 *     row in version.c. Static data: nothing to free. mg_cli_print_version() (mg/cli.h)
 *     prints them.
 */
#ifndef MG_VERSION_H
#define MG_VERSION_H

#include <stddef.h>

typedef struct {
    const char *name;  /* "libarchive", "OpenMP", ... */
    const char *macro; /* "MG_HAVE_ARCHIVE" */
    int built;         /* the macro's value: 1 compiled in, 0 not */
} mg_feature;

/* The git revision of the build ("76d817d", "76d817d-dirty", "unknown"). Never NULL. */
const char *mg_revision(void);
/* The optional parts, *n rows. */
const mg_feature *mg_features(size_t *n);

#endif /* MG_VERSION_H */
