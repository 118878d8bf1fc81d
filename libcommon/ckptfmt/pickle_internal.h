/* pickle_internal.h — helpers shared by pickle_graph.c, pickle_read.c and pickle_write.c
 * (not part of the public API).
 *   mg_pk_alloc: zeroed arena memory owned by g (NULL + message on failure).
 *   mg_pk_copy: NUL-terminated arena copy of len bytes.
 *   mg_pk_reserve: room for `extra` more item slots in a container node.
 *   mg_pk_add_tensor: records a tensor node in g's tensor list.
 */
#ifndef MG_PICKLE_INTERNAL_H
#define MG_PICKLE_INTERNAL_H

#include "mg/pickle.h"

void *mg_pk_alloc(mg_pk_graph *g, size_t n);
char *mg_pk_copy(mg_pk_graph *g, const void *p, size_t len);
mg_status mg_pk_reserve(mg_pk_graph *g, mg_pk_obj *o, size_t extra);
mg_status mg_pk_add_tensor(mg_pk_graph *g, mg_pk_obj *t);

#endif
