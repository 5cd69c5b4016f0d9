/* q9diff's stand-in for libQnnHtp.so, used only by scripts/make_pte_fixtures.py.
 *
 * Why: executorch 1.5.1's AOT adaptor was compiled against QNN 2.37 headers, where an HTP device
 * custom config is {u32 option; union of u32-sized members} with the union at offset 4. QAIRT
 * 2.51's libQnnHtp.so expects the union at offset 8 (the union gained a pointer member), so it
 * reads socModel 0 and device creation fails with error 14001. This library forwards
 * QnnInterface_getProviders to the real backend and, in the real provider's function table, puts
 * wrappers in the deviceCreate and deviceSetConfig slots that rewrite each custom device config
 * into the 2.51 layout before calling the real functions. Nothing else is touched.
 *
 * Layout facts used (x86-64):
 *   QnnInterface_t: u32 backendId @0, char *providerName @8, API version (6 x u32) @16,
 *                   function table of pointers @40.
 *   function table: deviceCreate is entry 40, deviceSetConfig entry 41 (unchanged 2.37 -> 2.51).
 *   device config:  u32 option @0 (0 = custom), union{void *customConfig; ...} @8.
 *   HTP custom config, 2.37: u32 option @0, 8-byte union @4.  2.51: u32 option @0, union @8.
 *
 * The real library's path comes from $Q9_REAL_QNN_HTP. Build (the script does it):
 *   cc -shared -fPIC -O2 -Wl,-soname,libQnnHtp.so -Wl,-z,nodelete -o libQnnHtp.so pte_shim.c -ldl
 * -z nodelete: ExecuTorch dlcloses and reopens the backend between lowerings; the patched table
 * and the real library must outlive that.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef uint64_t q9_err_t;
typedef q9_err_t (*get_providers_fn)(const void ***providers, uint32_t *count);
typedef q9_err_t (*device_create_fn)(void *logger, const void **configs, void **device);
typedef q9_err_t (*device_set_config_fn)(void *device, const void **configs);

enum { TABLE_OFFSET = 40, SLOT_DEVICE_CREATE = 40, SLOT_DEVICE_SET_CONFIG = 41 };
enum { MAX_CONFIGS = 64, NEW_UNION_BYTES = 56 };

struct device_config { /* option @0, pointer-sized union @8 */
    uint32_t option;
    uint32_t pad;
    void *custom;
};

struct old_htp_config { /* 2.37: union @4 */
    uint32_t option;
    uint8_t payload[8];
};

struct new_htp_config { /* 2.51: union @8; the union is given ample zeroed room */
    uint32_t option;
    uint32_t pad;
    uint8_t payload[NEW_UNION_BYTES];
};

static device_create_fn real_device_create;
static device_set_config_fn real_device_set_config;
static get_providers_fn real_get_providers;

static int verbose(void) {
    const char *v = getenv("Q9_SHIM_VERBOSE");
    return v != NULL && v[0] == '1';
}

/* Copy a NULL-terminated config list, rewriting custom configs into the new layout. The copies
 * live in the caller's frame: the backend reads them during the call only. */
struct rewritten {
    const void *list[MAX_CONFIGS + 1];
    struct device_config outer[MAX_CONFIGS];
    struct new_htp_config inner[MAX_CONFIGS];
};

static const void **rewrite(const void **configs, struct rewritten *r) {
    if (configs == NULL) return NULL;
    memset(r, 0, sizeof(*r));
    size_t n = 0;
    for (; configs[n] != NULL; n++) {
        if (n == MAX_CONFIGS) {
            fprintf(stderr, "[q9 shim] more than %d device configs, passed unchanged\n", MAX_CONFIGS);
            return configs;
        }
        const struct device_config *c = configs[n];
        r->outer[n] = *c;
        if (c->option == 0 && c->custom != NULL) {
            const struct old_htp_config *o = c->custom;
            r->inner[n].option = o->option;
            memcpy(r->inner[n].payload, o->payload, sizeof(o->payload));
            r->outer[n].custom = &r->inner[n];
            if (verbose()) {
                uint32_t first;
                memcpy(&first, o->payload, 4);
                fprintf(stderr, "[q9 shim] device custom config option %u value %u rewritten\n",
                        o->option, first);
            }
        }
        r->list[n] = &r->outer[n];
    }
    r->list[n] = NULL;
    return r->list;
}

static q9_err_t shim_device_create(void *logger, const void **configs, void **device) {
    struct rewritten r;
    return real_device_create(logger, rewrite(configs, &r), device);
}

static q9_err_t shim_device_set_config(void *device, const void **configs) {
    struct rewritten r;
    return real_device_set_config(device, rewrite(configs, &r));
}

/* 1: patched now, 0: already patched (the table outlives reloads), -1: error. */
static int patch_slot(uint8_t *provider, int slot, void *wrapper, void **saved) {
    void **entry = (void **)(provider + TABLE_OFFSET + 8 * slot);
    if (*entry == wrapper) return 0;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)entry & ~(uintptr_t)(page - 1);
    if (mprotect((void *)start, (size_t)page * 2, PROT_READ | PROT_WRITE) != 0) {
        perror("[q9 shim] mprotect");
        return -1;
    }
    *saved = *entry;
    *entry = wrapper;
    return 1;
}

q9_err_t QnnInterface_getProviders(const void ***providers, uint32_t *count) {
    if (real_get_providers == NULL) {
        const char *path = getenv("Q9_REAL_QNN_HTP");
        if (path == NULL) {
            fprintf(stderr, "[q9 shim] Q9_REAL_QNN_HTP is not set\n");
            return 1;
        }
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (lib == NULL) {
            fprintf(stderr, "[q9 shim] %s\n", dlerror());
            return 1;
        }
        real_get_providers = (get_providers_fn)dlsym(lib, "QnnInterface_getProviders");
        if (real_get_providers == NULL) {
            fprintf(stderr, "[q9 shim] %s\n", dlerror());
            return 1;
        }
    }
    q9_err_t err = real_get_providers(providers, count);
    if (err != 0 || providers == NULL || *providers == NULL) return err;
    for (uint32_t i = 0; i < *count; i++) {
        uint8_t *p = (uint8_t *)(*providers)[i];
        void *saved_create = NULL, *saved_set = NULL;
        int a = patch_slot(p, SLOT_DEVICE_CREATE, (void *)shim_device_create, &saved_create);
        int b = patch_slot(p, SLOT_DEVICE_SET_CONFIG, (void *)shim_device_set_config, &saved_set);
        if (a < 0 || b < 0) return 1;
        if (saved_create != NULL) real_device_create = (device_create_fn)saved_create;
        if (saved_set != NULL) real_device_set_config = (device_set_config_fn)saved_set;
        if (verbose() && (a > 0 || b > 0)) fprintf(stderr, "[q9 shim] provider %u patched\n", i);
    }
    return err;
}
