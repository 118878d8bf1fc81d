/* version.c — mg/version.h: the build's revision and its optional parts. */
#include "mg/version.h"

/* MG_REVISION: written by mk/install.mk into $(BUILD)/gen/mg_revision.h. */
#include "mg_revision.h"

#define MG_FEATURE(macro, name) {name, "MG_HAVE_" #macro, MG_HAVE_##macro}

/* One row per MG_HAVE_* macro of mk/config.mk (an undefined macro fails the build). */
static const mg_feature features[] = {
    MG_FEATURE(ARCHIVE, "libarchive"),
    MG_FEATURE(ONIG, "Oniguruma"),
    MG_FEATURE(UTF8PROC, "utf8proc"),
    MG_FEATURE(BLAS, "OpenBLAS"),
    MG_FEATURE(OPENMP, "OpenMP"),
    MG_FEATURE(MPI, "MPI"),   /* mg-train's communication (COMM_DEFS of mk/config.mk) */
    MG_FEATURE(NCCL, "NCCL"),
};

const char *mg_revision(void)
{
    return MG_REVISION;
}

const mg_feature *mg_features(size_t *n)
{
    *n = sizeof features / sizeof features[0];
    return features;
}
