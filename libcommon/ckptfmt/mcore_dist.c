/* mcore_dist.c — mg/mcore_dist.h: Megatron-Core's torch_dist conventions (the folder test,
 * parameter keys in stacked and per-layer form, the extra-state keys, metadata.json). */
#include "mg/mcore_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg/file.h"

const char mg_mcore_dist_json[] = "{\"sharded_backend\": \"torch_dist\", \"sharded_backend_version\": 1, "
                                  "\"common_backend\": \"torch\", \"common_backend_version\": 1}";

int mg_mcore_dist_is(const char *dir)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/metadata.json", dir);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

mg_status mg_mcore_dist_check(const char *dir)
{
    char path[4200], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/metadata.json", dir);
    MG_FORWARD(mg_read_file(path, &text, &len));
    const char *k = strstr(text, "\"sharded_backend\"");
    const char *v = k ? k + strlen("\"sharded_backend\"") : NULL;
    while (v && (*v == ' ' || *v == ':' || *v == '\t' || *v == '\n' || *v == '\r')) v++;
    mg_status st = MG_OK;
    if (!v || *v != '"')
        st = mg_error_set(MG_ERR_FORMAT, "%s: no \"sharded_backend\" string", path);
    else if (strncmp(v, "\"torch_dist\"", 12) != 0)
        st = mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: sharded_backend %.40s (%s; "
                          "only torch_dist is read)", v, path);
    free(text);
    return st;
}

void mg_mcore_dist_key(const mg_param *p, mg_names names, int stacked, char *buf, size_t cap)
{
    mg_schema_mcore_name(p, names, p->layer, buf, cap);
    char *l = p->layer >= 0 ? strstr(buf, "layers.") : NULL;
    if (!stacked || !l) return;
    char *num = l + 7, *dot = strchr(num, '.');
    if (dot) memmove(num, dot + 1, strlen(dot + 1) + 1);
}

const mg_dcp_item *mg_mcore_dist_find(const mg_dcp_meta *m, const mg_param *p, int *stacked,
                                      char *name, size_t cap)
{
    static const mg_names order[] = {MG_NAMES_TE, MG_NAMES_LOCAL};
    for (int st = 1; st >= 0; st--)
        for (int i = 0; i < 2; i++) {
            if (st && p->layer < 0) continue;
            mg_mcore_dist_key(p, order[i], st, name, cap);
            const mg_dcp_item *it = mg_dcp_find(m, name);
            if (it) return *stacked = st, it;
        }
    mg_mcore_dist_key(p, MG_NAMES_TE, p->layer >= 0, name, cap);
    return NULL;
}

int mg_mcore_dist_extra_state(int64_t layers, size_t i, char *buf, size_t cap)
{
    static const char *const mods[] = {"self_attention.linear_qkv", "self_attention.linear_proj",
                                       "mlp.linear_fc1", "mlp.linear_fc2"};
    size_t per = sizeof mods / sizeof mods[0];
    if (layers <= 0 || i >= (size_t)layers * per) return 0;
    snprintf(buf, cap, "decoder.layers.%s._extra_state/shard_%zu_%lld", mods[i % per], i / per,
             (long long)layers);
    return 1;
}

mg_status mg_mcore_dist_common(const char *dir, const mg_dcp_dir *d, mg_torch_file **f,
                               mg_pk_obj **root)
{
    char path[4200];
    struct stat sb;
    *f = NULL;
    snprintf(path, sizeof path, "%s/common.pt", dir);
    const mg_dcp_item *it = mg_dcp_find(mg_dcp_dir_meta(d), "common_state/shard_0_1");
    if (stat(path, &sb) == 0 || !it) {
        MG_FORWARD(mg_torch_open(f, path));
        *root = mg_torch_root(*f);
    } else {
        snprintf(path, sizeof path, "%s: common_state/shard_0_1", dir);
        MG_FORWARD(mg_torch_open_mem(f, mg_dcp_dir_bytes(d, &it->chunks[0]),
                                     (size_t)it->chunks[0].length, path));
        mg_pk_obj *l = mg_torch_root(*f);
        *root = l->kind == MG_PK_LIST && l->n == 1 ? l->items[0] : l;
    }
    MG_RETURN_IF((*root)->kind != MG_PK_DICT && (*root)->kind != MG_PK_ODICT, MG_ERR_FORMAT,
                 "%s: the common state is a %s, not a dict", path, mg_pk_kind_name((*root)->kind));
    return MG_OK;
}

mg_status mg_mcore_dist_write_extra_states(mg_dcp_meta *m, uint32_t file, mg_out *out)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *none_list = g ? mg_pk_container(g, MG_PK_LIST) : NULL, *none = g ? mg_pk_none(g) : NULL;
    mg_status st = none_list && none ? mg_pk_append(g, none_list, none) : MG_ERR_NOMEM;
    for (size_t i = 0; i < m->nitems && st == MG_OK; i++)
        if (m->items[i].is_bytes && m->items[i].chunks[0].file == file)
            st = mg_dcp_write_item(out, none_list, NULL, &m->items[i].chunks[0]);
    mg_pk_graph_free(g);
    return st;
}
