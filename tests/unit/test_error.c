/* test_error.c — unit tests for mg/error.h. */
#include <errno.h>

#include "harness.h"

MG_TEST(error_set_and_prefix)
{
    MG_CHECK_EQ_INT(t, mg_error_set(MG_ERR_FORMAT, "x.jsonl:%d: bad", 3), MG_ERR_FORMAT);
    MG_CHECK_EQ_STR(t, mg_last_error(), "x.jsonl:3: bad");
    mg_error_prefix("reading %s", "corpus");
    MG_CHECK_EQ_STR(t, mg_last_error(), "reading corpus: x.jsonl:3: bad");
}

MG_TEST(error_errno_maps_status)
{
    MG_CHECK_EQ_INT(t, mg_error_errno(ENOSPC, "write %s", "f"), MG_ERR_NOSPACE);
    MG_CHECK(t, strstr(mg_last_error(), "write f: ") == mg_last_error());
    MG_CHECK_EQ_INT(t, mg_error_errno(ENOENT, "open"), MG_ERR_NOTFOUND);
    MG_CHECK_EQ_INT(t, mg_error_errno(EACCES, "open"), MG_ERR_IO);
}
